"""Differential tests of our decoder against independent Kafka codecs (kio, kafka-python)."""
