"""Malformed request bytes end INVALID_ARGUMENT naming the method, as the error convention says.

grpcio deserializes a request before any servicer code runs, and answers bytes that do not
parse with INTERNAL "Exception deserializing request!", which reads as a server bug.
``MalformedRequestInterceptor`` takes parsing over: each method handler with a single
request gets the raw bytes (no ``request_deserializer``), and its behaviour parses them
first, aborting with ``INVALID_ARGUMENT`` "malformed <Method> request: ..." when they do not
parse. Place it last among a server's interceptors so that authorization still runs first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

_Behavior = Callable[[Any, grpc.ServicerContext], Any]


def _parsing(behavior: _Behavior, parse: Callable[[bytes], Any], method: str) -> _Behavior:
    def parsed(raw: bytes, context: grpc.ServicerContext) -> Any:
        try:
            request = parse(raw)
        except DecodeError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed {method} request: {exc}")
        return behavior(request, context)

    return parsed


class MalformedRequestInterceptor(grpc.ServerInterceptor):
    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler  # streamed requests are parsed message by message, by grpcio
        name = "unary_stream" if handler.response_streaming else "unary_unary"
        method = handler_call_details.method.rsplit("/", 1)[-1]  # "/pkg.Service/Method"
        parsing = _parsing(getattr(handler, name), handler.request_deserializer, method)
        # RpcMethodHandler is a namedtuple in grpcio: replace the parser and the behaviour.
        return handler._replace(request_deserializer=None, **{name: parsing})
