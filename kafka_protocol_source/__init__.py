"""kafka-wire: decode Kafka network traffic (captures and stream dumps) into tables."""
