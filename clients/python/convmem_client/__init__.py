"""A thin client for the convmem API, with Idempotency-Keys and safe retries built in.

Every write sends an ``Idempotency-Key`` generated here (uuid4) and reuses it on each retry,
so a retry can only replay or resume the first request, never write twice. Retried, with
exponential backoff and jitter: connection errors and timeouts, 429 (honouring
``Retry-After``), 503, and 409 ``idempotency_key_in_flight``. Other errors raise
``ConvmemError``.

``respond_stream`` yields the endpoint's Server-Sent Events as ``Event(type, data)``: ``turn``,
``token`` (``data["text"]``), then ``done`` (the stored turn). When the connection drops
mid-answer (or the model fails mid-answer), it retries with the same key and yields
``Event("restart", …)`` first: what was shown so far is superseded, the answer starts over.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["Convmem", "ConvmemError", "Event"]

RETRY_STATUSES = {429, 503}
IN_FLIGHT = "idempotency_key_in_flight"


class ConvmemError(Exception):
    """An error answer of the API (``status``, ``code``, ``detail``, the whole ``body``), or a
    connection that kept failing (``status`` 0, ``code`` ``connection_error``)."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body

    @classmethod
    def of(cls, response: httpx.Response) -> ConvmemError:
        try:
            body = response.json()
        except ValueError:
            body = {"code": "http_error", "detail": response.text[:500]}
        return cls(
            response.status_code, body.get("code", "http_error"), body.get("detail", ""), body
        )


@dataclass(frozen=True)
class Event:
    type: str
    data: dict[str, Any]


def _retryable(status: int, code: str | None) -> bool:
    return status in RETRY_STATUSES or (status == 409 and code == IN_FLIGHT)


def _code(response: httpx.Response) -> str | None:
    try:
        return response.json().get("code")
    except ValueError:
        return None


def _compact(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


class Convmem:
    """``Convmem("https://convmem.example.com", api_key="…")``; methods return the API's JSON."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
    ) -> None:
        self.base_url = base_url.rstrip("/") + "/api/v1"
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._http = httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {api_key}"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Convmem:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- threads -----------------------------------------------------------------------------

    def create_thread(
        self,
        user_ref: str,
        *,
        title: str = "",
        metadata: dict[str, Any] | None = None,
        profile: str | None = None,
    ) -> dict[str, Any]:
        body = _compact(
            {"user_ref": user_ref, "title": title, "metadata": metadata, "profile": profile}
        )
        return self._write("POST", "/threads", body)

    def get_thread(self, thread_id: str) -> dict[str, Any]:
        return self._read(f"/threads/{thread_id}")

    def list_threads(self, *, user_ref: str | None = None) -> Iterator[dict[str, Any]]:
        """Every thread (of one end user), newest first, following the pages."""
        yield from self._pages("/threads", _compact({"user_ref": user_ref}))

    def switch_branch(self, thread_id: str, message_id: str | None) -> dict[str, Any]:
        """Make ``message_id`` the active leaf (None: start over from the root)."""
        return self._send("PATCH", f"/threads/{thread_id}", {"active_leaf_id": message_id})

    def delete_thread(self, thread_id: str) -> dict[str, Any]:
        """Erase the thread (answers the executed deletion request with its proof)."""
        return self._write("DELETE", f"/threads/{thread_id}", None)

    # --- messages ----------------------------------------------------------------------------

    def append(self, thread_id: str, role: str, content: Any, **fields: Any) -> dict[str, Any]:
        """``fields``: ``parent_id``, ``assembly_id``, ``tool_calls``, ``tool_call_id``,
        ``metadata``, ``model``, ``usage``."""
        body = {"role": role, "content": content, **_compact(fields)}
        return self._write("POST", f"/threads/{thread_id}/messages", body)

    def edit(self, thread_id: str, message_id: str, content: Any, **fields: Any) -> dict[str, Any]:
        body = {"content": content, **_compact(fields)}
        return self._write("POST", f"/threads/{thread_id}/messages/{message_id}/edit", body)

    def messages(self, thread_id: str, *, leaf: str | None = None) -> list[dict[str, Any]]:
        """The path root → leaf (the active leaf by default), every page."""
        pages = list(self._page_list(f"/threads/{thread_id}/messages", _compact({"leaf": leaf})))
        return [message for page in reversed(pages) for message in page]

    def redact(self, thread_id: str, message_id: str, *, reason: str = "") -> dict[str, Any]:
        path = f"/threads/{thread_id}/messages/{message_id}/redact"
        return self._write("POST", path, {"reason": reason})

    # --- model input and answers -------------------------------------------------------------

    def context(self, thread_id: str, **budget: Any) -> dict[str, Any]:
        """``budget``: ``window_tokens``, ``reserve_tokens``, ``system``, ``leaf_id``,
        ``retrieved`` (``[{"ref", "content"}]``)."""
        return self._send("POST", f"/threads/{thread_id}/context", _compact(budget))

    def respond(self, thread_id: str, content: Any, **options: Any) -> dict[str, Any]:
        """One turn, answered: the stored user turn and answer (``RespondResult``).
        ``options``: ``window_tokens``, ``reserve_tokens``, ``system``, ``retrieved``,
        ``metadata``, ``parent_id``, ``max_tokens``, ``temperature``. One answer at a time per
        thread: while another answer runs on the thread the server answers 409 ``thread_busy``,
        raised as ``ConvmemError`` (not retried: wait for that answer, then ask)."""
        body = {"content": content, **_compact(options), "stream": False}
        return self._write("POST", f"/threads/{thread_id}/respond", body)

    def respond_stream(self, thread_id: str, content: Any, **options: Any) -> Iterator[Event]:
        """One turn, streamed: ``turn``, ``token``…, ``done`` (see the module docstring)."""
        url = f"{self.base_url}/threads/{thread_id}/respond"
        body = {"content": content, **_compact(options), "stream": True}
        headers = {"Idempotency-Key": str(uuid.uuid4()), "Accept": "text/event-stream"}
        attempt = 0
        while True:
            shown = False
            try:
                with self._http.stream("POST", url, json=body, headers=headers) as response:
                    if response.status_code != 200:
                        response.read()
                        if (
                            _retryable(response.status_code, _code(response))
                            and attempt < self.max_retries
                        ):
                            attempt += 1
                            self._sleep(attempt, response)
                            continue
                        raise ConvmemError.of(response)
                    for event in _events(response.iter_lines()):
                        if event.type == "error":
                            if (
                                event.data.get("code") == "model_unavailable"
                                and attempt < self.max_retries
                            ):
                                break
                            raise ConvmemError(
                                502,
                                event.data.get("code", ""),
                                event.data.get("detail", ""),
                                event.data,
                            )
                        yield event
                        shown = shown or event.type == "token"
                        if event.type == "done":
                            return
            except httpx.TransportError as error:
                if attempt >= self.max_retries:
                    raise ConvmemError(0, "connection_error", str(error)) from error
            # The stream ended without `done`: the connection dropped, or the model failed.
            attempt += 1
            if attempt > self.max_retries:
                raise ConvmemError(0, "connection_error", "the stream kept ending early")
            if shown:
                yield Event("restart", {"attempt": attempt})
            self._sleep(attempt)

    # --- usage -------------------------------------------------------------------------------

    def usage(
        self,
        *,
        start: str | None = None,
        end: str | None = None,
        group_by: str = "day",
        user_ref: str | None = None,
    ) -> dict[str, Any]:
        """Tokens and cost per day or month (``start``/``end``: ISO dates, both included)."""
        params = _compact({"from": start, "to": end, "group_by": group_by, "user_ref": user_ref})
        return self._read("/usage", params)

    # --- plumbing ----------------------------------------------------------------------------

    def _read(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._request("GET", path, params=params)

    def _send(self, method: str, path: str, body: Any) -> dict[str, Any]:
        """A request that is safe to repeat without a key (reads, context, PATCH)."""
        return self._request(method, path, body=body)

    def _write(self, method: str, path: str, body: Any) -> dict[str, Any]:
        """A write: one Idempotency-Key for every attempt."""
        return self._request(method, path, body=body, key=str(uuid.uuid4()))

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        url = path if path.startswith("http") else self.base_url + path
        headers = {"Idempotency-Key": key} if key else {}
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    method, url, json=body, params=params, headers=headers
                )
            except httpx.TransportError as error:
                if attempt >= self.max_retries:
                    raise ConvmemError(0, "connection_error", str(error)) from error
                attempt += 1
                self._sleep(attempt)
                continue
            if response.status_code < 400:
                return response.json()
            if _retryable(response.status_code, _code(response)) and attempt < self.max_retries:
                attempt += 1
                self._sleep(attempt, response)
                continue
            raise ConvmemError.of(response)

    def _page_list(self, path: str, params: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
        url: str | None = self.base_url + path
        while url:
            page = self._request("GET", url, params=params)
            yield page["results"]
            url, params = page.get("next"), {}

    def _pages(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for page in self._page_list(path, params):
            yield from page

    def _sleep(self, attempt: int, response: httpx.Response | None = None) -> None:
        retry_after = response.headers.get("Retry-After") if response is not None else None
        if retry_after and retry_after.isdigit():
            delay = float(retry_after)
        else:
            delay = self.backoff * 2 ** (attempt - 1) * random.uniform(0.5, 1.0)
        time.sleep(min(delay, self.max_backoff))


def _events(lines: Iterator[str]) -> Iterator[Event]:
    """Server-Sent Events from the response's lines."""
    name, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield Event(name, json.loads("\n".join(data)))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:") :].strip())
