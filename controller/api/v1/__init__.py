"""Generated protobuf and gRPC code for the ``zkcontroller.v1`` API (see ``proto/``).

Do not edit the ``*_pb2*.py`` files; regenerate them with ``python -m controller.api.codegen``.
"""
