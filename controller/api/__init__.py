"""The public gRPC API: generated code in ``controller.api.v1``, error helpers in ``errors``."""

# The largest gRPC message either side accepts. An UpdateMetadata for every partition of a
# large cluster exceeds gRPC's 4 MiB default receive limit (about 40 bytes per partition).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024

# Channel/server options that apply MAX_MESSAGE_BYTES in both directions.
MESSAGE_SIZE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
)
