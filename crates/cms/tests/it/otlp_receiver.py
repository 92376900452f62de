"""An OTLP/HTTP trace receiver for the tests: decodes each export with the OpenTelemetry
project's own protobuf definitions (opentelemetry-proto) and prints every span as one
JSON line on standard output. The first line is `listening PORT`."""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(415)
            self.end_headers()
            print(json.dumps({"refused": self.path, "type": self.headers.get("Content-Type")}), flush=True)
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    print(json.dumps({
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                        "service": resource.get("service.name"),
                    }), flush=True)
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Receiver)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
