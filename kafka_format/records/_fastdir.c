/*
 * kafka_format.records._fastdecode: one partition directory listed into segment columns
 * (kafka_format.storage.partition_files.scan_local_partition's compiled twin).
 *
 * A cluster-wide read lists hundreds of thousands of segment files on the driver; in Python the
 * per-file work (a DirEntry, a stat result, name parsing) costs more than the system calls.  Here
 * readdir + fstatat fill int64 rows (base offset, .log size and mtime, .index, .timeindex and
 * .txnindex sizes) for the files named as Kafka names them (20 digits + suffix,
 * LogFileUtils.filenamePrefixFromOffset); every other entry comes back as a Python row for the
 * Python rules.  Anything unusual (a digit-named segment file not in 20 digits, a stat error
 * other than a broken link) answers None: the Python listing decides then.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NAME_DIGITS 20
#define INT64_MAX_DIGITS "09223372036854775807"
#define MISSING INT64_MIN

/* Columns of a row (partition_files.SegmentTable). */
enum { COL_BASE, COL_LOG, COL_MTIME, COL_INDEX, COL_TIMEINDEX, COL_TXNINDEX, NCOLS };

static const struct {
    const char *suffix;
    size_t len;
    int column;
} KINDS[] = {
    {".log", 4, COL_LOG}, {".index", 6, COL_INDEX}, {".timeindex", 10, COL_TIMEINDEX},
    {".txnindex", 9, COL_TXNINDEX},
};

typedef struct {
    int64_t base;
    int column;
    int64_t size;
    int64_t mtime;
} FileEntry;

static int entry_order(const void *a, const void *b)
{
    const FileEntry *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

/* The column of a segment file name, -1 for another name, -2 for a digit-named segment file
 * that is not in Kafka's 20-digit form (the Python rules decide). */
static int segment_column(const char *name, int64_t *base)
{
    size_t n = strlen(name), digits = 0;
    while (digits < n && name[digits] >= '0' && name[digits] <= '9')
        digits++;
    if (digits == 0)
        return -1;
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        if (n - digits == KINDS[k].len && memcmp(name + digits, KINDS[k].suffix, KINDS[k].len) == 0) {
            if (digits != NAME_DIGITS || memcmp(name, INT64_MAX_DIGITS, NAME_DIGITS) > 0)
                return -2;
            int64_t v = 0;
            for (size_t i = 0; i < NAME_DIGITS; i++)
                v = v * 10 + (name[i] - '0');
            *base = v;
            return KINDS[k].column;
        }
    }
    return -1;
}

/* Python's st_mtime_ns // 1_000_000 (floor division). */
static int64_t mtime_ms(const struct stat *st)
{
    int64_t ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + (int64_t)st->st_mtim.tv_nsec;
    return ns >= 0 ? ns / 1000000 : -((-ns + 999999) / 1000000);
}

PyDoc_STRVAR(scan_partition_dir_doc,
"scan_partition_dir(path) -> (rows, others, dirs, logs, indexes) | None\n\n"
"rows: int64 bytes, 6 per segment (base, .log size, .log mtime ms, .index, .timeindex, .txnindex\n"
"sizes; INT64_MIN when absent, -1 size for a file that is not regular), sorted by base;\n"
"others: (name, False, size or None, mtime ms) of every other file; dirs: subdirectory names\n"
"(both unsorted); logs/indexes: segments with a .log / .index.  Symlinks followed, broken ones\n"
"left out; a missing directory is empty.  None when the Python listing must decide.");

static PyObject *fd_scan_partition_dir(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *path_obj;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj))
        return NULL;
    const char *path = PyBytes_AS_STRING(path_obj);
    PyObject *result = NULL, *others = NULL, *dirs = NULL, *rows = NULL;
    FileEntry *files = NULL;
    size_t nfiles = 0, cap = 0;
    int fallback = 0;
    DIR *d = opendir(path);
    if (!d) {
        if (errno == ENOENT) {                    /* a missing directory lists empty */
            result = Py_BuildValue("(y#[][]nn)", "", (Py_ssize_t)0, (Py_ssize_t)0, (Py_ssize_t)0);
        } else {
            result = Py_NewRef(Py_None);
        }
        Py_DECREF(path_obj);
        return result;
    }
    others = PyList_New(0);
    dirs = PyList_New(0);
    if (!others || !dirs)
        goto done;
    int dfd = dirfd(d);
    struct dirent *e;
    for (;;) {
        errno = 0;
        e = readdir(d);
        if (!e) {
            if (errno)
                fallback = 1;
            break;
        }
        const char *name = e->d_name;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))
            continue;
        struct stat st;
        if (fstatat(dfd, name, &st, 0) != 0) {
            if (errno == ENOENT)
                continue;                         /* a broken symlink: pyarrow leaves it out */
            fallback = 1;
            break;
        }
        int64_t base = 0;
        int column = S_ISDIR(st.st_mode) ? -1 : segment_column(name, &base);
        if (column == -2) {
            fallback = 1;
            break;
        }
        if (column >= 0) {
            if (nfiles == cap) {
                cap = cap ? 2 * cap : 64;
                FileEntry *grown = PyMem_Realloc(files, cap * sizeof *files);
                if (!grown) {
                    PyErr_NoMemory();
                    goto done;
                }
                files = grown;
            }
            files[nfiles++] = (FileEntry){base, column, S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1,
                                          mtime_ms(&st)};
            continue;
        }
        PyObject *py_name = PyUnicode_DecodeFSDefault(name);
        if (!py_name)
            goto done;
        int rc;
        if (S_ISDIR(st.st_mode)) {
            rc = PyList_Append(dirs, py_name);
        } else {
            PyObject *size = S_ISREG(st.st_mode) ? PyLong_FromLongLong((long long)st.st_size) : Py_NewRef(Py_None);
            PyObject *row = size ? Py_BuildValue("(OONL)", py_name, Py_False, size, (long long)mtime_ms(&st)) : NULL;
            rc = row ? PyList_Append(others, row) : -1;
            Py_XDECREF(row);
        }
        Py_DECREF(py_name);
        if (rc < 0)
            goto done;
    }
    if (fallback) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (nfiles > 1)                          /* qsort's base must not be NULL, even for 0 entries */
        qsort(files, nfiles, sizeof *files, entry_order);
    size_t nrows = 0;
    for (size_t i = 0; i < nfiles; i++)
        nrows += i == 0 || files[i].base != files[i - 1].base;
    rows = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(nrows * NCOLS * sizeof(int64_t)));
    if (!rows)
        goto done;
    int64_t *out = (int64_t *)PyBytes_AS_STRING(rows), *row = NULL;
    Py_ssize_t logs = 0, indexes = 0;
    for (size_t i = 0; i < nfiles; i++) {
        if (i == 0 || files[i].base != files[i - 1].base) {
            row = row ? row + NCOLS : out;
            row[COL_BASE] = files[i].base;
            for (int c = 1; c < NCOLS; c++)
                row[c] = MISSING;
        }
        row[files[i].column] = files[i].size;
        if (files[i].column == COL_LOG) {
            row[COL_MTIME] = files[i].mtime;
            logs++;
        } else if (files[i].column == COL_INDEX) {
            indexes++;
        }
    }
    result = Py_BuildValue("(OOOnn)", rows, others, dirs, logs, indexes);
done:
    closedir(d);
    PyMem_Free(files);
    Py_XDECREF(rows);
    Py_XDECREF(others);
    Py_XDECREF(dirs);
    Py_DECREF(path_obj);
    return result;
}

PyMethodDef kf_dir_methods[] = {
    {"scan_partition_dir", fd_scan_partition_dir, METH_VARARGS, scan_partition_dir_doc},
    {NULL, NULL, 0, NULL},
};
