"""The ``kafka-wire`` command: a traffic report, SQL, or a SQL shell over captures, through Spark.

    kafka-wire report PATH... [--ports 9092,9093] [--top 10] [--specs DIR_OR_KRAMMAR_FILE]
    kafka-wire sql PATH... "SELECT api_name, count(*) FROM exchanges GROUP BY 1" ["QUERY"...]
    kafka-wire shell PATH...

Each registers the views ``exchanges`` (one row per exchange; ``traffic`` is the same view under
its old name), ``records`` (one row per record produced or fetched), ``connections``, ``groups``
and ``lag``.
"""

from .app import main
from .report import REPORT_QUERIES

__all__ = ["REPORT_QUERIES", "main"]
