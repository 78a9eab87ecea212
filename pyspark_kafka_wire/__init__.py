"""Makes ``spark.read.format("kafka-wire")`` work after ``pip install`` with no registration call.

PySpark (4.0+) looks for top-level modules named ``pyspark_*`` that expose ``DefaultSource``
and registers each under its ``name()``.
"""

from kafka_protocol_source.spark.source import KafkaWireDataSource as DefaultSource

__all__ = ["DefaultSource"]
