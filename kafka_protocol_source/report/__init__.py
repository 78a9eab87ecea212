"""The HTML report over captures: Spark SQL over the exchanges and records views, rendered to one file.

``write_html_report(spark, exchanges, records, path)`` is the whole job; ``python -m
kafka_protocol_source.report CAPTURE... --html out.html`` runs it from a shell.
"""

from .compute import ReportData, compute_report
from .html import render_html, write_html_report

__all__ = ["ReportData", "compute_report", "render_html", "write_html_report"]
