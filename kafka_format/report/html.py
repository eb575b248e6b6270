"""Self-contained HTML report pages: summary first, sortable and filterable tables, inline SVG charts
(:mod:`kafka_format.report.charts`).

A page is one file with its style, script and pictures inline: it opens offline, from a mail
attachment or a bucket.  Every table is a plain ``<table>`` that reads fine with scripts off;
the small inline script only adds sorting (click a column heading) and a filter box per table.
Cells carry their exact value in ``title`` (a tooltip) and in ``data-sort`` where the text is
rounded (``1.2 GiB`` sorts by its bytes).  Every text is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_format.report.charts import bar_chart_svg, step_chart_svg, timeline_svg

__all__ = ["ROW_LIMIT", "Card", "Cell", "Page", "bar_chart_svg", "details_list", "step_chart_svg", "timeline_svg"]

_e = html.escape

#: Rows a table draws at most (``Page.table``): the rest are in the job's data outputs.
ROW_LIMIT = 2000


@dataclass(frozen=True)
class Cell:
    """One table cell: the text shown, the exact value as a tooltip, the key it sorts by, a CSS class."""

    text: str
    title: str | None = None
    sort: int | float | str | None = None
    cls: str | None = None
    raw_html: bool = False        # ``text`` is markup made by this module (e.g. a <details> list)

    def render(self) -> str:
        return _td(self.text if self.raw_html else _e(self.text), self.title, self.sort, self.cls)


def _td(body: str, title: str | None, sort: int | float | str | None, cls: str | None) -> str:
    """A ``<td>`` around markup ``body``, its attributes escaped."""
    attrs = ""
    if cls:
        attrs += f' class="{_e(cls)}"'
    if title is not None:
        attrs += f' title="{_e(title)}"'
    if sort is not None:
        attrs += f' data-sort="{_e(str(sort))}"'
    return f"<td{attrs}>{body}</td>"


@dataclass(frozen=True)
class Card:
    """A summary figure at the top of a page (``cls``: ``error``, ``warning``, ``ok`` or None)."""

    label: str
    value: str
    title: str | None = None
    cls: str | None = None


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1400px;
 padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em}
.sub{color:#666;margin-top:0}
.cards{display:flex;flex-wrap:wrap;gap:.6em;margin:1em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.5em .9em;min-width:8em;background:#fafafa}
.card .v{font-size:1.35em;font-weight:600}.card .l{color:#666;font-size:.85em}
.card.error{border-color:#d33;background:#fff3f3}.card.warning{border-color:#d90;background:#fff9ec}
.card.ok{border-color:#3a3;background:#f3fff3}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:13px}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}th.sortable{cursor:pointer;user-select:none}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}td.nw{white-space:nowrap}
td .w{overflow-wrap:anywhere}div.scroll{overflow-x:auto;max-width:100%}
.error{color:#b00}.warning{color:#a60}.info{color:#555}
tr.error td:first-child{border-left:3px solid #d33}tr.warning td:first-child{border-left:3px solid #d90}
input.filter{margin:.3em 0;padding:3px 6px;width:18em}
details summary{cursor:pointer}details ul{margin:.3em 0;padding-left:1.2em}
svg{max-width:100%;height:auto}svg text{font-size:11px;fill:#333}
.note{color:#666;font-size:.9em}
"""

# Sorting and filtering; the page works without it.  No framework, no network, no console output.
_SCRIPT = """
(function(){
function key(td){var s=td.getAttribute('data-sort');var t=s!==null?s:td.textContent.trim();
 var n=Number(t);return t!==''&&!isNaN(n)?{n:n}:{s:t.toLowerCase()};}
function cmp(a,b){if(a.n!==undefined&&b.n!==undefined)return a.n-b.n;
 if(a.n!==undefined)return -1;if(b.n!==undefined)return 1;return a.s<b.s?-1:a.s>b.s?1:0;}
document.querySelectorAll('table.data').forEach(function(table){
 var head=table.tHead;if(!head||!table.tBodies.length)return;var body=table.tBodies[0];
 Array.prototype.forEach.call(head.rows[0].cells,function(th,col){
  th.classList.add('sortable');th.setAttribute('role','button');
  th.addEventListener('click',function(){
   var asc=!th.classList.contains('asc');
   Array.prototype.forEach.call(head.rows[0].cells,function(o){o.classList.remove('asc','desc');});
   th.classList.add(asc?'asc':'desc');
   var rows=Array.prototype.slice.call(body.rows);
   rows.sort(function(r1,r2){var c=cmp(key(r1.cells[col]),key(r2.cells[col]));return asc?c:-c;});
   rows.forEach(function(r){body.appendChild(r);});});});
 var box=document.createElement('input');box.type='search';box.className='filter';
 box.placeholder='filter rows';box.setAttribute('aria-label','filter rows');
 table.parentNode.insertBefore(box,table);
 box.addEventListener('input',function(){var q=box.value.toLowerCase();
  Array.prototype.forEach.call(body.rows,function(r){
   r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});
});
})();
"""


class Page:
    """An HTML report built top to bottom: :meth:`cards`, :meth:`heading`, :meth:`table`, ..."""

    def __init__(self, title: str, subtitle: str | None = None) -> None:
        self.title = title
        self._parts: list[str] = [f"<h1>{_e(title)}</h1>"]
        if subtitle:
            self._parts.append(f'<p class="sub">{_e(subtitle)}</p>')

    def cards(self, cards: Iterable[Card]) -> Page:
        """The summary row: a few figures that say what matters."""
        out = ['<div class="cards">']
        for c in cards:
            cls = f"card {c.cls}" if c.cls else "card"
            title = f' title="{_e(c.title)}"' if c.title else ""
            out.append(f'<div class="{cls}"{title}><div class="v">{_e(c.value)}</div>'
                       f'<div class="l">{_e(c.label)}</div></div>')
        out.append("</div>")
        self._parts.append("".join(out))
        return self

    def heading(self, text: str) -> Page:
        """A section heading."""
        self._parts.append(f"<h2>{_e(text)}</h2>")
        return self

    def paragraph(self, text: str, *, cls: str | None = None) -> Page:
        """A paragraph of plain text."""
        attr = f' class="{_e(cls)}"' if cls else ""
        self._parts.append(f"<p{attr}>{_e(text)}</p>")
        return self

    def bullets(self, items: Iterable[str], *, cls: str | None = None) -> Page:
        """A list of plain-text items."""
        attr = f' class="{_e(cls)}"' if cls else ""
        self._parts.append(f"<ul{attr}>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>")
        return self

    def svg(self, markup: str) -> Page:
        """A picture made by :mod:`kafka_format.report.charts`."""
        self._parts.append(f"<figure>{markup}</figure>")
        return self

    def image(self, src: str, alt: str, *, link: str | None = None) -> Page:
        """An image (e.g. a ``data:`` PNG), linked to ``link`` when given."""
        img = f'<img src="{_e(src)}" alt="{_e(alt)}">'
        self._parts.append(f'<p><a href="{_e(link)}">{img}</a></p>' if link else f"<p>{img}</p>")
        return self

    def link(self, text: str, href: str) -> Page:
        """A paragraph that is one link (e.g. to a file beside the page)."""
        self._parts.append(f'<p class="note"><a href="{_e(href)}">{_e(text)}</a></p>')
        return self

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Cell | str | int | float | None]], *,
              table_id: str, numeric: Iterable[str] = (), wrap: Mapping[str, float] | Iterable[str] = (),
              row_classes: Sequence[str | None] | None = None, empty: str = "none", total: int | None = None,
              rest: str = "", limit: int = ROW_LIMIT) -> Page:
        """A sortable, filterable data table; ``numeric`` columns align right; only the ``wrap``
        columns (long texts) break over lines, each at least as wide as its value in ``em`` (a
        mapping) or 12 em, every other cell keeps to one line.

        At most ``limit`` rows are drawn, the first of ``rows`` (a lazy iterable is read no further):
        a page stays readable and quick to write at any scale.  When there are more (``total``: how
        many rows there are in all, default ``len(rows)``), a note under the table says how many are
        shown and ``rest`` where every row is."""
        nums = {columns.index(c) for c in numeric}
        widths = dict(wrap) if isinstance(wrap, Mapping) else dict.fromkeys(wrap, 12.0)
        wraps = {columns.index(c): w for c, w in widths.items()}
        extras = [("num " if j in nums else "") + ("wrap" if j in wraps else "nw") for j in range(len(columns))]
        head = "".join(f"<th>{_e(c)}</th>" for c in columns)
        if total is None and isinstance(rows, Sequence):
            total = len(rows)
        body: list[str] = []
        for i, row in enumerate(rows):
            if i == limit:
                break
            cells = []
            for j, value in enumerate(row):
                cell = value if isinstance(value, Cell) else Cell("" if value is None else str(value))
                text = cell.text if cell.raw_html else _e(cell.text)
                if j in wraps:           # a block with a minimum width: a long text wraps, never to a sliver
                    text = f'<div class="w" style="min-width:{wraps[j]:g}em">{text}</div>'
                cells.append(_td(text, cell.title, cell.sort, f"{cell.cls} {extras[j]}" if cell.cls else extras[j]))
            cls = row_classes[i] if row_classes is not None and i < len(row_classes) else None
            attr = f' class="{_e(cls)}"' if cls else ""
            body.append(f"<tr{attr}>" + "".join(cells) + "</tr>")
        if not body:
            self._parts.append(f'<p class="note">{_e(empty)}</p>')
            return self
        self._parts.append(f'<div class="scroll"><table class="data" id="{_e(table_id)}"><thead><tr>{head}</tr>'
                           f"</thead><tbody>{''.join(body)}</tbody></table></div>")
        if total is not None and total > len(body):
            self._parts.append(f'<p class="note">The first {len(body):,} of {total:,} rows, in the order above '
                               f"(sorting and the filter apply to these).{' ' + _e(rest) if rest else ''}</p>")
        return self

    def render(self) -> str:
        """The whole page."""
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                f"<title>{_e(self.title)}</title><style>{_STYLE}</style></head><body>\n"
                + "\n".join(self._parts)
                + f"\n<script>{_SCRIPT}</script>\n</body></html>\n")


def details_list(summary: str, items: Sequence[str], *, limit: int = 200, total: int | None = None) -> str:
    """Markup for a folded list (``<details>``): ``summary`` shown, the first ``limit`` of ``items``
    on demand (``total``: how many there are in all, when ``items`` holds only the first)."""
    shown = items[:limit]
    total = len(items) if total is None else total
    more = f"<li>… {total - len(shown)} more in the JSON/Parquet output</li>" if total > len(shown) else ""
    return (f"<details><summary>{_e(summary)}</summary><ul>"
            + "".join(f"<li>{_e(i)}</li>" for i in shown) + more + "</ul></details>")

