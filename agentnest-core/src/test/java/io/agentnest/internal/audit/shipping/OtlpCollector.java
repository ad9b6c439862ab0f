package io.agentnest.internal.audit.shipping;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.logs.v1.LogRecord;
import io.opentelemetry.proto.logs.v1.ResourceLogs;
import io.opentelemetry.proto.logs.v1.ScopeLogs;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPInputStream;

/**
 * An OTLP/HTTP logs receiver on loopback that decodes each protobuf export request; {@link #status}
 * sets what it answers (503: a collector that is down).
 */
final class OtlpCollector implements AutoCloseable {
  /** One received log record with its resource's attributes and the request's headers. */
  record Received(LogRecord log, Map<String, String> resource, Map<String, String> headers) {
    String attr(String key) {
      return attrs(log.getAttributesList()).get(key);
    }
  }

  final List<Received> received = new CopyOnWriteArrayList<>();
  final AtomicInteger status = new AtomicInteger(200);
  final AtomicInteger requests = new AtomicInteger();
  private final HttpServer server;

  OtlpCollector() throws IOException {
    server = HttpServer.create(new InetSocketAddress(Collectors.LOOPBACK, 0), 16);
    server.createContext("/v1/logs", this::handle);
    server.start();
  }

  String endpoint() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/logs";
  }

  private void handle(HttpExchange x) throws IOException {
    requests.incrementAndGet();
    try (InputStream raw = x.getRequestBody()) {
      int code = status.get();
      if (code != 200) {
        raw.readNBytes(8 << 20);
        x.sendResponseHeaders(code, -1);
        return;
      }
      InputStream in =
          "gzip".equalsIgnoreCase(x.getRequestHeaders().getFirst("Content-Encoding"))
              ? new GZIPInputStream(raw)
              : raw;
      ExportLogsServiceRequest req = ExportLogsServiceRequest.parseFrom(in.readNBytes(8 << 20));
      Map<String, String> headers =
          Map.of(
              "authorization",
              String.valueOf(x.getRequestHeaders().getFirst("Authorization")),
              "content-type",
              String.valueOf(x.getRequestHeaders().getFirst("Content-Type")));
      for (ResourceLogs rl : req.getResourceLogsList()) {
        Map<String, String> res = attrs(rl.getResource().getAttributesList());
        for (ScopeLogs sl : rl.getScopeLogsList()) {
          for (LogRecord lr : sl.getLogRecordsList()) {
            received.add(new Received(lr, res, headers));
          }
        }
      }
      byte[] ok = ExportLogsServiceResponse.getDefaultInstance().toByteArray();
      x.getResponseHeaders().set("Content-Type", "application/x-protobuf");
      x.sendResponseHeaders(200, ok.length == 0 ? -1 : ok.length);
      if (ok.length > 0) {
        try (OutputStream out = x.getResponseBody()) {
          out.write(ok);
        }
      }
    } finally {
      x.close();
    }
  }

  static Map<String, String> attrs(List<KeyValue> kvs) {
    Map<String, String> m = new LinkedHashMap<>();
    for (KeyValue kv : kvs) {
      AnyValue v = kv.getValue();
      m.put(kv.getKey(), v.hasIntValue() ? String.valueOf(v.getIntValue()) : v.getStringValue());
    }
    return m;
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
