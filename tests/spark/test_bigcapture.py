"""The replicated captures the split tests and benchmarks use look like many clients of one broker."""

from kafka_protocol_source import read_capture

from .bigcapture import replicate


def test_replicas_rewrite_the_clients_address_and_keep_the_brokers(samples, tmp_path):
    source = samples / "tansu_confluent_kafka_all_codecs.pcap"
    original = list(read_capture(source, ports=None))
    copies = replicate(source, tmp_path / "big.pcap", copies=3)
    replicated = list(read_capture(tmp_path / "big.pcap", ports=None))
    assert len(replicated) == copies * len(original)
    assert {e.broker_address for e in replicated} == {e.broker_address for e in original}
    clients = {e.client_address.rsplit(":", 1)[0] for e in replicated}
    assert clients == {"10.0.0.0", "10.0.0.1", "10.0.0.2"}
