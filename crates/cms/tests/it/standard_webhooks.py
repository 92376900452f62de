"""Verifies webhook deliveries with the official Standard Webhooks package.

Usage: standard_webhooks.py SECRET DELIVERIES.json
DELIVERIES.json: a list of {"headers": {...}, "body": "..."} as the receiver got them.
The secret is passed exactly as `cms webhooks add` printed it. Prints "verified N".
"""
import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

secret, path = sys.argv[1], sys.argv[2]
deliveries = json.load(open(path))
hook = Webhook(secret)
for delivery in deliveries:
    payload = hook.verify(delivery["body"], delivery["headers"])
    assert "event" in payload, payload
    tampered = delivery["body"].replace('"data"', '"Data"')
    try:
        hook.verify(tampered, delivery["headers"])
    except WebhookVerificationError:
        pass
    else:
        raise SystemExit("a tampered body verified")
try:
    Webhook("whsec_" + "00" * 32).verify(deliveries[0]["body"], deliveries[0]["headers"])
except WebhookVerificationError:
    pass
else:
    raise SystemExit("another secret verified")
print(f"verified {len(deliveries)}")
