"""The HTTP layer every HTTP backend shares: one endpoint, pure classification, the sender.

Every wire's backend holds an ``HttpEndpoint`` (through ``harness.backends.remote``) and
only translates bodies; see ``endpoint.py`` for what the layer owns.
"""

from harness.backends.http.classify import Decision, classify, error_excerpt, parse_retry_after
from harness.backends.http.endpoint import HttpEndpoint, HttpResponse
from harness.backends.http.sender import HttpSender, RawResponse, Sender

__all__ = [
    "Decision",
    "HttpEndpoint",
    "HttpResponse",
    "HttpSender",
    "RawResponse",
    "Sender",
    "classify",
    "error_excerpt",
    "parse_retry_after",
]
