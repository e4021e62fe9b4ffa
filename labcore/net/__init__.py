from .ledger import Ledger
from .message import Message, Part, array_part, bytes_part, deserialize_parts, frame_bytes, seed_part, serialize_part
from .wallclock import RoundTimeModel, table2

__all__ = ["Ledger", "Message", "Part", "array_part", "bytes_part", "seed_part", "serialize_part",
           "deserialize_parts", "frame_bytes", "RoundTimeModel", "table2"]
