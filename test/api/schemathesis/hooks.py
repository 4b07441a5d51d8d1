# Schemathesis hooks of test/api/schemathesis.test.ts: the few answers it cannot judge.
#
# Only rejections of schema-valid requests (ST202) whose every reason is one of the rules
# below are dropped, each rule with why. Everything else it reports, every other check
# included, fails the test.
import json
import re
import uuid

import schemathesis

FIELD = r"(?:\w+(?:\[\d+\])?\.)*"

# Why each reason cannot be judged from the document (one part of "Invalid request: a; b"):
UNJUDGEABLE = [
    # A phone number must be possible for its country (libphonenumber's metadata): the
    # document gives its characters as a pattern and says the rest in words, so a string
    # that matches the pattern may still be no phone number.
    re.compile(rf"^{FIELD}(phone_number|from_number|did) is not a valid phone number$"),
    # A time zone must be one the service's time-zone database (ICU) has; the pattern only
    # says what a zone name looks like.
    re.compile(rf"^{FIELD}timezone: must be an IANA time zone such as Europe/Paris$"),
    # A calling window's end must differ from its start: JSON Schema cannot compare two fields.
    re.compile(rf"^{FIELD}end: must differ from start$"),
]

PRINTABLE_KEY = re.compile(r"^[\x20-\x7e]{1,255}$")


def _message(response):
    try:
        body = json.loads(response.text)
    except (TypeError, ValueError):
        return None
    return body.get("message") if isinstance(body, dict) else None


@schemathesis.hook
def map_headers(ctx, headers):
    """A fresh Idempotency-Key for every request that sends a valid one.

    Schemathesis draws keys from a small space ("0", "00"), so two requests meet under one
    key: with another body the service rightly answers 422, with the same body it replays the
    first answer (a list since deleted, say). A client reuses a key only to retry the same
    request. Invalid keys (the negative cases) are left as drawn.
    """
    if headers and isinstance(headers.get("Idempotency-Key"), str) and PRINTABLE_KEY.match(headers["Idempotency-Key"]):
        headers["Idempotency-Key"] = uuid.uuid4().hex
    return headers


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    """Keeps a failure unless it is a 400 whose every reason is unjudgeable (above)."""
    if getattr(failure, "code", None) != "ST202" or response.status_code not in (400, 422):
        return True
    message = _message(response)
    if response.status_code == 422:
        # The examples phase sends the document's one example Idempotency-Key with every
        # example body (map_headers does not reach it): a key reused with another body,
        # rightly 422, which a real client never does on purpose.
        return message != "Idempotency-Key was already used with a different request body"
    if not isinstance(message, str) or not message.startswith("Invalid request: "):
        return True
    parts = message[len("Invalid request: "):].split("; ")
    return not all(any(rule.match(part) for rule in UNJUDGEABLE) for part in parts)
