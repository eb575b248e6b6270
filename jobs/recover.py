"""spark-submit entry point of ``klogs recover``: ``spark-submit jobs/recover.py ARGS``.

The job's code is :mod:`kafka_format.jobs.recover` (in the installed package); under spark-submit the
job uses spark-submit's ``--master`` and ``--conf``.
"""

import sys

from kafka_format.engine import one_blas_thread

one_blas_thread()  # before numpy is imported
from kafka_format.jobs.recover import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
