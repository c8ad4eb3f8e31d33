package onceflow.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Pattern;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The onceflow benchmark pipelines written in the Kafka Streams DSL, so the two can be run side by
 * side on the same input. Each pipeline mirrors the meaning of its onceflow topology
 * (bench/topologies/filter-map.ts, topology/word-count.ts, topology/orders.ts) including where it
 * repartitions, so both do the same amount of broker work.
 *
 * Usage: java -jar kafka-streams-peer.jar PIPELINE BOOTSTRAP INPUT OUTPUT APP_ID [COMMIT_INTERVAL_MS] [STREAM_THREADS]
 * Prints JSON lines on stdout (state changes) for bench/run.ts; logs go to stderr.
 */
public final class Peer {
  static final ObjectMapper JSON = new ObjectMapper();
  static final Pattern NON_WORD = Pattern.compile("[^\\p{L}\\p{N}']+");
  /** Same as topology/orders.ts ORDERS_DEFAULTS.dedupeTtlMs. */
  static final long DEDUPE_TTL_MS = 3_600_000L;

  public static void main(String[] args) throws Exception {
    if (args.length < 5) {
      System.err.println("usage: Peer <filter-map|word-count|orders|word-count-8x1000|customer-sum> <bootstrap> <input> <output> <app-id> [commit-interval-ms] [stream-threads]");
      System.exit(2);
    }
    String pipeline = args[0], bootstrap = args[1], input = args[2], output = args[3], appId = args[4];
    String commitMs = args.length > 5 ? args[5] : "100";
    String streamThreads = args.length > 6 ? args[6] : "1";

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
    // One stream thread unless asked: the bench compares onceflow's --threads N with num.stream.threads=N.
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, streamThreads);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
    // The bench sets it as onceflow's: no purge of consumed repartition records within a run.
    String purgeMs = System.getProperty("onceflow.bench.purgeIntervalMs");
    if (purgeMs != null) p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, purgeMs);
    p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("onceflow-bench-ks-").toString());
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

    Topology topology = switch (pipeline) {
      case "filter-map" -> filterMap(input, output);
      case "word-count" -> wordCount(input, output);
      case "orders" -> orders(input, output);
      case "word-count-8x1000" -> wordCount8x1000(input, output);
      case "customer-sum" -> customerSum(input, output);
      default -> throw new IllegalArgumentException("unknown pipeline " + pipeline);
    };

    KafkaStreams streams = new KafkaStreams(topology, p);
    CountDownLatch closed = new CountDownLatch(1);
    streams.setStateListener((now, before) -> {
      event("{\"type\":\"state\",\"state\":\"" + now + "\",\"from\":\"" + before + "\"}");
      if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) closed.countDown();
    });
    streams.setUncaughtExceptionHandler(e -> {
      event("{\"type\":\"error\",\"message\":" + JSON.valueToTree(String.valueOf(e)) + "}");
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      streams.close(Duration.ofSeconds(30));
      closed.countDown();
    }));
    streams.start();
    closed.await();
    streams.close(Duration.ofSeconds(30));
  }

  static synchronized void event(String json) {
    System.out.println("{\"at\":" + System.currentTimeMillis() + "," + json.substring(1));
    System.out.flush();
  }

  // --- pipelines ---

  /** bench/topologies/filter-map.ts: drop CANCELLED orders, add amountCents. */
  static Topology filterMap(String input, String output) {
    StreamsBuilder b = new StreamsBuilder();
    b.stream(input, Consumed.with(Serdes.String(), JSON_SERDE))
        .filter((k, o) -> o != null && !"CANCELLED".equals(o.path("status").asText()))
        .mapValues(o -> (JsonNode) ((ObjectNode) o.deepCopy()).put("amountCents", o.path("amount").asLong() * 100))
        .to(output, Produced.with(Serdes.String(), JSON_SERDE));
    return b.build();
  }

  /** topology/word-count.ts: lower-case words of each line, re-keyed by word, counted. */
  static Topology wordCount(String input, String output) {
    StreamsBuilder b = new StreamsBuilder();
    countWords(b.stream(input, Consumed.with(Serdes.String(), Serdes.String())).flatMapValues(Peer::words), output);
    return b.build();
  }

  static List<String> words(String text) {
    return text == null ? List.of() : Arrays.stream(NON_WORD.split(text.toLowerCase(Locale.ROOT))).filter(w -> !w.isEmpty()).toList();
  }

  /** Re-keyed by word (the "counts" repartition), counted, the count as text. */
  static void countWords(KStream<String, String> words, String output) {
    words
        .groupBy((k, word) -> word, Grouped.with("counts", Serdes.String(), Serdes.String()))
        .count(Materialized.as("counts"))
        .toStream()
        .mapValues(String::valueOf)
        .to(output, Produced.with(Serdes.String(), Serdes.String()));
  }

  /** bench/topologies/word-count-8x1000.ts: the words of each JSON document's text, re-keyed by word, counted. */
  static Topology wordCount8x1000(String input, String output) {
    StreamsBuilder b = new StreamsBuilder();
    countWords(b.stream(input, Consumed.with(Serdes.String(), JSON_SERDE)).flatMapValues(doc -> doc == null ? List.<String>of() : words(doc.path("text").asText())), output);
    return b.build();
  }

  /** bench/topologies/customer-sum.ts: PAID events re-keyed by customer, amounts summed. */
  static Topology customerSum(String input, String output) {
    StreamsBuilder b = new StreamsBuilder();
    b.stream(input, Consumed.with(Serdes.String(), JSON_SERDE))
        .filter((k, o) -> o != null && "PAID".equals(o.path("status").asText()))
        .groupBy((k, o) -> o.path("customerId").asText(), Grouped.with("customer-sum", Serdes.String(), JSON_SERDE))
        .aggregate(
            () -> 0L,
            (customer, o, total) -> total + o.path("amount").asLong(),
            Materialized.<String, Long, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("customer-sum").withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream()
        .mapValues(total -> String.valueOf(total))
        .to(output, Produced.with(Serdes.String(), Serdes.String()));
    return b.build();
  }

  /**
   * topology/orders.ts: dedupe by eventId (remembered for an hour of stream time), re-key by
   * orderId and keep only versions newer than the last seen, then per customer keep the paid amount
   * of each order whose latest status is PAID and emit the total.
   */
  static Topology orders(String input, String output) {
    StreamsBuilder b = new StreamsBuilder();
    StoreBuilder<KeyValueStore<String, Long>> seen = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("order-events-seen"), Serdes.String(), Serdes.Long());
    StoreBuilder<KeyValueStore<String, Long>> versions = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("order-versions"), Serdes.String(), Serdes.Long());
    b.addStateStore(seen);
    b.addStateStore(versions);

    KStream<String, JsonNode> orders = b.stream(input, Consumed.with(Serdes.String(), JSON_SERDE)).filter((k, o) -> o != null && o.has("eventId"));
    orders
        .processValues(Dedupe::new, "order-events-seen")
        .selectKey((k, o) -> o.path("orderId").asText())
        // process/processValues do not repartition by themselves; onceflow's latestByVersion does.
        .repartition(Repartitioned.<String, JsonNode>as("order-versions").withKeySerde(Serdes.String()).withValueSerde(JSON_SERDE))
        .processValues(LatestByVersion::new, "order-versions")
        .groupBy((orderId, o) -> o.path("customerId").asText(), Grouped.with("customer-paid", Serdes.String(), JSON_SERDE))
        .aggregate(
            () -> (JsonNode) JSON.createObjectNode().put("total", 0).set("paid", JSON.createObjectNode()),
            (customer, o, state) -> applyOrder(o, (ObjectNode) state),
            Materialized.<String, JsonNode, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("customer-paid").withKeySerde(Serdes.String()).withValueSerde(JSON_SERDE))
        .toStream()
        .mapValues(state -> String.valueOf(state.path("total").asLong()))
        .to(output, Produced.with(Serdes.String(), Serdes.String()));
    return b.build();
  }

  /** processors/orders.ts applyOrder: the paid amount per order, so a re-paid order replaces, not adds. */
  static JsonNode applyOrder(JsonNode order, ObjectNode state) {
    ObjectNode paid = (ObjectNode) state.get("paid");
    String orderId = order.path("orderId").asText();
    if ("PAID".equals(order.path("status").asText())) paid.put(orderId, order.path("amount").asLong());
    else paid.remove(orderId);
    long total = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = paid.fields(); it.hasNext(); ) total += it.next().getValue().asLong();
    state.put("total", total);
    return state;
  }

  static final class Dedupe implements FixedKeyProcessor<String, JsonNode, JsonNode> {
    private FixedKeyProcessorContext<String, JsonNode> ctx;
    private KeyValueStore<String, Long> store;

    @Override
    public void init(FixedKeyProcessorContext<String, JsonNode> context) {
      ctx = context;
      store = context.getStateStore("order-events-seen");
    }

    @Override
    public void process(FixedKeyRecord<String, JsonNode> r) {
      String id = r.value().path("eventId").asText();
      Long firstSeen = store.get(id);
      if (firstSeen != null && firstSeen + DEDUPE_TTL_MS > r.timestamp()) return;
      store.put(id, r.timestamp());
      ctx.forward(r);
    }
  }

  static final class LatestByVersion implements FixedKeyProcessor<String, JsonNode, JsonNode> {
    private FixedKeyProcessorContext<String, JsonNode> ctx;
    private KeyValueStore<String, Long> store;

    @Override
    public void init(FixedKeyProcessorContext<String, JsonNode> context) {
      ctx = context;
      store = context.getStateStore("order-versions");
    }

    @Override
    public void process(FixedKeyRecord<String, JsonNode> r) {
      long version = r.value().path("version").asLong();
      Long last = store.get(r.key());
      if (last != null && last >= version) return;
      store.put(r.key(), version);
      ctx.forward(r);
    }
  }

  // --- JSON serde ---

  static final Serde<JsonNode> JSON_SERDE = Serdes.serdeFrom(
      (Serializer<JsonNode>) (topic, v) -> {
        try {
          return v == null ? null : JSON.writeValueAsBytes(v);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      },
      // A record that is not JSON becomes null and is filtered out, as onceflow dead-letters it.
      (Deserializer<JsonNode>) (topic, bytes) -> {
        if (bytes == null) return null;
        try {
          return JSON.readTree(bytes);
        } catch (Exception e) {
          return null;
        }
      });

  private Peer() {}
}
