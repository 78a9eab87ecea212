"""Spark layer: the ``kafka-wire`` Python data source (the only stage that imports pyspark).

``register(spark)`` registers the source explicitly (Spark Connect, or when the auto-discovered
``pyspark_kafka_wire`` module is not on the executors' path); plain ``pip install`` needs nothing.
"""

from .source import KafkaWireDataSource


def register(spark) -> None:
    spark.dataSource.register(KafkaWireDataSource)


__all__ = ["KafkaWireDataSource", "register"]
