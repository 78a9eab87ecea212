"""The examples of the krammar seed document (shared/seeds/000_67a1d8ef2f960fc8.txt, "krammar:
kafka grammar"), one constant per example, laid out as the seed's text describes them."""

COMMENTS = """\
// FooRequest is a foo request.
FooRequest =>
  // FooField is a string.
  FooField: string
"""

FIELD_VERSION = """\
FooRequest =>
  FooField: string // v1+
"""

STRUCT_FIELD_VERSION = """\
FooRequest =>
  // All fields in FooField are bounded between version 3 and 5.
  FooField: [=>] // v3-v5
    Biz: int8
    Bar: int8
    Baz: int8
"""

# "Arrays": [bool], nullable[int8], varint[Header] and [=>], here as fields of one struct.
ARRAYS = """\
Header => not top level
  Key: varint-string
  Value: varint-bytes

Arrays => not top level
  Booleans: [bool]
  Int8s: nullable[int8]
  Headers: varint[Header]
  Anonymous: [=>]
    Inner: int8
"""

STRUCTS = """\
SimpleType =>
  Field1: int8

FooRequest =>
  Field1: string
  Field2: int8
  Field3Pluralies: [=>]Field3Pluraly
    InnerField1: int8
    InnerField2: nullable-bytes
    InnerField3: [SimpleType]
    InnerField4s: [=>]
      InnerInner: string
    InnerField5: =>
      SuperIn: varint
  Field4: int8
"""

# "length-field-minus": the seed's only use, RecordBatch's records (franz-go's RecordBatch).
LENGTH_FIELD_MINUS = """\
RecordBatch => not top level, no encoding
  FirstOffset: int64
  Length: int32
  PartitionLeaderEpoch: int32
  Magic: int8
  CRC: int32
  Attributes: int16
  LastOffsetDelta: int32
  FirstTimestamp: int64
  MaxTimestamp: int64
  ProducerID: int64
  ProducerEpoch: int16
  FirstSequence: int32
  NumRecords: int32
  Records: length-field-minus => Length - 49
"""

MODIFIERS = """\
Record => not top level
  Key: bytes
  Value: bytes

ProduceRequest => key 0, max version 10
  Records: [Record]

ProduceResponse =>
  ErrorCode: int16

DeleteTopicRequest => key 1, max version 2, admin
  Topic: string

DeleteTopicResponse =>
  ErrorCode: int16

JoinGroupRequest => key 2, max version 3, group coordinator
  GroupID: string

JoinGroupResponse =>
  ErrorCode: int16

TxnCommitRequest => key 3, max version 8, txn coordinator
  TxnID: string

TxnCommitResponse =>
  ErrorCode: int16
"""

VERSION_FIELD = """\
StickyMemberMetadata => not top level, with version field
  Version: int16
  Generation: int32 // v1+
"""

ALL = {name: text for name, text in globals().items() if name.isupper() and name != "ALL"}
