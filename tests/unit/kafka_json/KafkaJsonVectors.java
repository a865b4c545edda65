// Writes test vectors for tests/unit/test_kafka_json_bytes.py: the exact bytes Kafka 3.6's
// ZkData encoders produce, as one JSON object per line ({"kind", inputs..., "kafka": bytes}).
//
// Kafka builds each znode from Scala maps (immutable Map1-Map4 keep insertion order;
// mutable.HashMap iterates by hash) or java.util.Properties / HashMap and serialises them with
// Jackson, so its key order is a property of those collections. This program rebuilds every
// document exactly as ZkData.scala (tag 3.6.2) does, with the Scala 2.13 library and Jackson
// jars that ship in pyspark, so the vectors are Kafka's real bytes, not a re-implementation.
// Regenerate with `make kafka-json-vectors` (needs a JDK; the test itself needs only Python).
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.*;
import scala.Tuple2;
import scala.collection.immutable.ArraySeq$;
import scala.jdk.javaapi.CollectionConverters;

@SuppressWarnings({"unchecked", "rawtypes"})
public class KafkaJsonVectors {
  static final ObjectMapper M = new ObjectMapper();
  static final Random R = new Random(20261127);

  static Object pairs(Object... kv) {
    Object[] t = new Object[kv.length / 2];
    for (int i = 0; i < t.length; i++) t[i] = new Tuple2(kv[2 * i], kv[2 * i + 1]);
    return ArraySeq$.MODULE$.unsafeWrapArray(t);
  }

  // Scala's `Map(k -> v, ...)`.
  static scala.collection.immutable.Map imm(Object... kv) {
    return (scala.collection.immutable.Map)
        scala.collection.immutable.Map$.MODULE$.from((scala.collection.IterableOnce) pairs(kv));
  }

  // Scala's `mutable.Map(k -> v, ...)` (a mutable.HashMap).
  static scala.collection.mutable.Map mut(Object... kv) {
    return (scala.collection.mutable.Map)
        scala.collection.mutable.HashMap$.MODULE$.from((scala.collection.IterableOnce) pairs(kv));
  }

  static Map j(scala.collection.Map m) {
    return CollectionConverters.asJava(m);
  }

  static void emit(ObjectNode line, Object kafkaDocument) throws Exception {
    String bytes = M.writeValueAsString(kafkaDocument);
    if (bytes.length() > 4096) {  // large documents as a digest, to keep the file small
      java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
      line.put("kafka_sha256", HexFormat.of().formatHex(sha.digest(bytes.getBytes("UTF-8"))));
    } else {
      line.put("kafka", bytes);
    }
    System.out.println(M.writeValueAsString(line));
  }

  static List<Integer> ints(int... xs) {
    List<Integer> out = new ArrayList<>();
    for (int x : xs) out.add(x);
    return out;
  }

  // TopicZNode.encode (ZkData.scala 3.6.2, lines 307-329). Partition p has replicas
  // [p % 5, (p + 1) % 5, (p + 2) % 5]; a reassigning one adds [5 + p % 3] and removes [p % 5].
  static void topic(int[] partitions, String topicId, Set<Integer> reassigning) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "topic");
    if (topicId != null) line.put("topic_id", topicId);
    boolean contiguous = true;
    for (int i = 0; i < partitions.length; i++) contiguous &= partitions[i] == i;
    if (contiguous) {
      line.put("partition_count", partitions.length);
    } else {
      ArrayNode ps = line.putArray("partitions");
      for (int p : partitions) ps.add(p);
    }
    ArrayNode re = line.putArray("reassigning");
    for (int p : new TreeSet<>(reassigning)) re.add(p);
    scala.collection.mutable.Map replicas = mut();
    scala.collection.mutable.Map adding = mut();
    scala.collection.mutable.Map removing = mut();
    for (int p : partitions) {
      List<Integer> r = ints(p % 5, (p + 1) % 5, (p + 2) % 5);
      List<Integer> add = reassigning.contains(p) ? ints(5 + p % 3) : ints();
      List<Integer> rem = reassigning.contains(p) ? ints(p % 5) : ints();
      replicas.update(Integer.toString(p), r);
      if (!add.isEmpty()) adding.update(Integer.toString(p), add);
      if (!rem.isEmpty()) removing.update(Integer.toString(p), rem);
    }
    scala.collection.mutable.Map doc =
        mut("version", 3, "partitions", j(replicas), "adding_replicas", j(adding),
            "removing_replicas", j(removing));
    if (topicId != null) doc.update("topic_id", topicId);
    emit(line, j(doc));
  }

  static int[] range(int n) {
    int[] out = new int[n];
    for (int i = 0; i < n; i++) out[i] = i;
    return out;
  }

  // TopicPartitionStateZNode.encode (lines 375-389).
  static void partitionState(int leader, int leaderEpoch, int controllerEpoch, List<Integer> isr,
                             boolean recovering) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "partition_state").put("leader", leader)
        .put("leader_epoch", leaderEpoch).put("controller_epoch", controllerEpoch)
        .put("recovering", recovering);
    line.set("isr", M.valueToTree(isr));
    scala.collection.immutable.Map doc = imm("version", 1, "leader", leader, "leader_epoch",
        leaderEpoch, "controller_epoch", controllerEpoch, "isr", isr);
    if (recovering) doc = (scala.collection.immutable.Map) doc.concat(
        (scala.collection.IterableOnce) pairs("leader_recovery_state", 1));
    emit(line, j(doc));
  }

  // FeatureZNode.encode (lines 950-966); at most four features, which keep their order.
  static void feature(int version, int status, String[] names) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "feature").put("version", version)
        .put("status", status);
    ArrayNode rows = line.putArray("features");
    Object[] kv = new Object[names.length * 2];
    for (int i = 0; i < names.length; i++) {
      short hi = (short) (i + 2);
      rows.addArray().add(names[i]).add(hi);
      Map<String, Short> levels = version == 1
          ? j(imm("max_version_level", hi, "min_version_level", hi))
          : j(imm("max_version_level", hi));
      kv[2 * i] = names[i];
      kv[2 * i + 1] = levels;
    }
    Map features = j(imm(kv));
    emit(line, j(mut("version", version, "status", status, "features", features)));
  }

  // BrokerIdZNode.encode (lines 154-175); listeners keep their order (at most four).
  static void broker(int version, String rack, String[][] listeners, String[] features)
      throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "broker").put("version", version)
        .put("timestamp", "1764230400000");
    if (rack != null) line.put("rack", rack);
    ArrayNode ls = line.putArray("listeners");
    List<String> endpoints = new ArrayList<>();
    Object[] protocols = new Object[listeners.length * 2];
    for (int i = 0; i < listeners.length; i++) {
      String[] l = listeners[i];  // name, protocol, host, port
      ls.addArray().add(l[0]).add(l[1]).add(l[2]).add(Integer.parseInt(l[3]));
      endpoints.add(l[0] + "://" + l[2] + ":" + l[3]);
      protocols[2 * i] = l[0];
      protocols[2 * i + 1] = l[1];
    }
    String host = null;
    int port = -1;
    for (String[] l : listeners) {
      if (l[1].equals("PLAINTEXT")) {
        host = l[2];
        port = Integer.parseInt(l[3]);
        break;
      }
    }
    scala.collection.mutable.Map doc = mut("version", version, "host", host, "port", port,
        "endpoints", endpoints, "jmx_port", -1, "timestamp", "1764230400000");
    if (rack != null && version >= 3) doc.update("rack", rack);
    if (version >= 4) doc.update("listener_security_protocol_map", j(imm(protocols)));
    if (version >= 5) {
      // Features.toMap: a java.util.HashMap of LinkedHashMaps {min_version, max_version}.
      ArrayNode fs = line.putArray("features");
      Map<String, Map<String, Short>> fm = new HashMap<>();
      for (int i = 0; i < features.length; i++) {
        Map<String, Short> range = new LinkedHashMap<>();
        range.put("min_version", (short) 1);
        range.put("max_version", (short) (i + 1));
        fm.put(features[i], range);
        fs.addArray().add(features[i]).add(1).add(i + 1);
      }
      doc.update("features", fm);
    }
    emit(line, j(doc));
  }

  static final String[] CONFIG_NAMES = {
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
    "flush.messages", "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.message.bytes", "message.downconversion.enable",
    "message.format.version", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.storage.enable",
    "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms",
    "segment.ms", "unclean.leader.election.enable", "log.retention.hours", "num.io.threads",
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "a", "b", "x.y", "zz",
  };

  // ConfigEntityZNode.encode (line 416): the config is a java.util.Properties.
  static void config(List<String> keys) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "config");
    ArrayNode rows = line.putArray("config");
    Properties props = new Properties();
    for (String k : keys) {
      String v = Integer.toString(R.nextInt(100000));
      props.setProperty(k, v);
      rows.addArray().add(k).add(v);
    }
    emit(line, j(imm("version", 1, "config", props)));
  }

  // An altered config (ConfigCommand.alterConfigWithZk, ZkAdminManager.incrementalAlterConfigs):
  // ConfigEntityZNode.decode reads the stored znode into a Properties in the document's order,
  // the added keys are set in order, then the deleted keys removed, and the result encoded. A
  // removal never shrinks the table, so the order is not that of a fresh Properties.
  static void configAlter(List<String> stored, List<String> added, List<String> deleted)
      throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "config_alter");
    Properties before = new Properties();
    for (String k : stored) before.setProperty(k, Integer.toString(R.nextInt(100000)));
    String storedBytes = M.writeValueAsString(j(imm("version", 1, "config", before)));
    line.put("stored", storedBytes);
    Properties props = new Properties();
    M.readTree(storedBytes).get("config").fields()
        .forEachRemaining(e -> props.setProperty(e.getKey(), e.getValue().asText()));
    ArrayNode rows = line.putArray("added");
    for (String k : added) {
      String v = Integer.toString(R.nextInt(100000));
      props.setProperty(k, v);
      rows.addArray().add(k).add(v);
    }
    ArrayNode gone = line.putArray("deleted");
    for (String k : deleted) {
      props.remove(k);
      gone.add(k);
    }
    emit(line, j(imm("version", 1, "config", props)));
  }

  // Jackson's string escapes: control characters as \\u00XX (upper-case hex), no others.
  static void configValues(String... kv) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "config");
    ArrayNode rows = line.putArray("config");
    Properties props = new Properties();
    for (int i = 0; i < kv.length; i += 2) {
      props.setProperty(kv[i], kv[i + 1]);
      rows.addArray().add(kv[i]).add(kv[i + 1]);
    }
    emit(line, j(imm("version", 1, "config", props)));
  }

  // Kafka's org.apache.kafka.common.TopicPartition: its equals and hashCode decide the order
  // of the hash sets and maps below (pyspark ships no kafka-clients jar).
  static final class TopicPartition {
    final String topic;
    final int partition;

    TopicPartition(String topic, int partition) {
      this.topic = topic;
      this.partition = partition;
    }

    @Override
    public int hashCode() {
      return 31 * (31 + partition) + Objects.hashCode(topic);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof TopicPartition t && t.partition == partition && t.topic.equals(topic);
    }
  }

  static final String[] TOPICS = {"orders", "payments", "t", "__consumer_offsets", "a.b-c_d"};

  static List<TopicPartition> randomPartitions(int n) {
    LinkedHashSet<TopicPartition> out = new LinkedHashSet<>();
    while (out.size() < n) {
      out.add(new TopicPartition(TOPICS[R.nextInt(TOPICS.length)], R.nextInt(n < 5 ? 4 : 3 * n)));
    }
    return new ArrayList<>(out);
  }

  static ArrayNode partitionsJson(ObjectNode line, String field, List<TopicPartition> tps) {
    ArrayNode rows = line.putArray(field);
    for (TopicPartition tp : tps) rows.addArray().add(tp.topic).add(tp.partition);
    return rows;
  }

  // PreferredReplicaElectionZNode.encode (lines 541-546): an immutable Set, as its callers
  // build it from a list (Set(tp...), or toSet).
  static void preferred(List<TopicPartition> tps) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "preferred_election");
    partitionsJson(line, "partitions", tps);
    Object set = scala.collection.immutable.Set$.MODULE$.from(
        CollectionConverters.asScala(tps.iterator()));
    Object maps = CollectionConverters.asJava((scala.collection.Set) ((scala.collection.Set) set)
        .map((scala.Function1<Object, Object>) o -> j(imm("topic", ((TopicPartition) o).topic,
            "partition", ((TopicPartition) o).partition))));
    emit(line, j(imm("version", 1, "partitions", maps)));
  }

  // IsrChangeNotificationSequenceZNode.encode (lines 447-451): the broker's mutable.HashSet
  // (ZkAlterPartitionManager.isrChangeSet), filled one partition at a time.
  static void isrChange(List<TopicPartition> tps) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "isr_change");
    partitionsJson(line, "partitions", tps);
    scala.collection.mutable.HashSet set = new scala.collection.mutable.HashSet();
    for (TopicPartition tp : tps) set.add(tp);
    Object maps = CollectionConverters.asJava((scala.collection.Set) set
        .map((scala.Function1<Object, Object>) o -> j(imm("topic", ((TopicPartition) o).topic,
            "partition", ((TopicPartition) o).partition))));
    emit(line, j(imm("version", 1, "partitions", maps)));
  }

  // KafkaController.maybeRemoveFromZkReassignment: the znode decoded into an immutable Map
  // (ReassignPartitionsZNode.decode's toMap), partitioned, the rest re-encoded in its order.
  static void reassignmentRewrite(List<TopicPartition> tps, Set<Integer> removed) throws Exception {
    ObjectNode line = M.createObjectNode().put("kind", "reassignment_rewrite");
    partitionsJson(line, "partitions", tps);
    ArrayNode gone = line.putArray("removed");
    Object[] kv = new Object[tps.size() * 2];
    for (int i = 0; i < tps.size(); i++) {
      kv[2 * i] = tps.get(i);
      kv[2 * i + 1] = ints(i % 7, i % 5);
      if (removed.contains(i)) gone.add(i);
    }
    scala.collection.immutable.Map map = imm(kv);
    Tuple2 parts = map.partition((scala.Function1<Object, Object>) e ->
        removed.contains(tps.indexOf((TopicPartition) ((Tuple2) e)._1())));
    scala.collection.immutable.Map rest = (scala.collection.immutable.Map) parts._2();
    List<Object> entries = new ArrayList<>();
    scala.collection.Iterator it = rest.iterator();
    while (it.hasNext()) {
      Tuple2 e = (Tuple2) it.next();
      TopicPartition tp = (TopicPartition) e._1();
      Map<String, Object> entry = new LinkedHashMap<>();
      entry.put("topic", tp.topic);
      entry.put("partition", tp.partition);
      entry.put("replicas", e._2());
      entries.add(entry);
    }
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("version", 1);
    doc.put("partitions", entries);
    emit(line, doc);
  }

  public static void main(String[] args) throws Exception {
    // Every size up to 50, and both sides of the table's growth at 96, 192 and 768 entries.
    for (int n = 1; n <= 50; n++) topic(range(n), null, Set.of());
    for (int n : new int[] {95, 96, 97, 130, 191, 192, 193, 767, 768, 1000}) {
      topic(range(n), null, Set.of());
    }
    for (int c = 0; c < 24; c++) {
      int n = 1 + R.nextInt(300);
      Set<Integer> reassigning = new HashSet<>();
      int k = R.nextInt(Math.min(n, 40) + 1);
      while (reassigning.size() < k) reassigning.add(R.nextInt(n));
      String id = c % 3 == 0 ? null : Base64.getUrlEncoder().withoutPadding()
          .encodeToString(UUID.nameUUIDFromBytes(("t" + c).getBytes()).toString().substring(0, 16)
              .getBytes());
      topic(range(n), id, reassigning);
    }
    topic(new int[] {3, 17, 40, 41, 2}, "AAAAAAAAAAAAAAAAAAAAAA", Set.of(17, 2));

    partitionState(1, 0, 1, ints(1, 2), false);
    partitionState(2, 7, 3, ints(2, 1, 3), false);
    partitionState(2, 7, 3, ints(2), true);
    partitionState(-1, 12, 40, ints(), false);

    feature(2, 1, new String[] {});
    feature(2, 0, new String[] {});
    feature(1, 1, new String[] {"metadata.version"});
    feature(2, 1, new String[] {"metadata.version", "transaction.version", "group.version"});
    feature(1, 1, new String[] {"b", "a", "feature_3", "z.z"});

    String[][] one = {{"PLAINTEXT", "PLAINTEXT", "broker-1.example.com", "9092"}};
    String[][] three = {
      {"INTERNAL", "SSL", "10.0.0.1", "9093"}, {"PLAINTEXT", "PLAINTEXT", "10.0.0.1", "9092"},
      {"CONTROLLER", "SASL_SSL", "10.0.0.1", "9094"}};
    for (int v = 1; v <= 5; v++) {
      broker(v, null, one, new String[] {});
      broker(v, "rack-a", three, new String[] {"metadata.version", "kraft.version"});
    }
    broker(5, null, three, new String[] {"f1", "f2", "f3", "f4", "f5", "f6"});

    configValues("a", "tab\there\nnew line", "b", "\u0001\u001f\u007f", "c", "quote \" back \\ slash",
        "d", "caf\u00e9 \u2028 \ud83d\ude00", "e", "</script>", "f\u00e9", "\\u0001 literal");
    for (int n : new int[] {1, 2, 3, 4, 5, 6, 8, 12, 17, 33, 40, 64, 100, 300}) {
      preferred(randomPartitions(n));
      isrChange(randomPartitions(n));
    }
    for (int c = 0; c < 30; c++) {
      List<TopicPartition> tps = randomPartitions(1 + R.nextInt(c < 15 ? 8 : 60));
      Set<Integer> removed = new HashSet<>();
      for (int i = 0; i < tps.size(); i++) if (R.nextInt(3) == 0) removed.add(i);
      if (removed.size() == tps.size()) removed.remove(0);
      reassignmentRewrite(tps, removed);
    }

    config(List.of());
    config(List.of("retention.ms"));
    for (int c = 0; c < 40; c++) {
      List<String> names = new ArrayList<>(Arrays.asList(CONFIG_NAMES));
      Collections.shuffle(names, R);
      config(names.subList(0, 1 + R.nextInt(names.size())));
    }

    // Altered configs: deletions across the table's growth at 12 and 24 keys, additions that
    // grow it, and both at once (after every vector above, so their random draws are kept).
    for (int c = 0; c < 40; c++) {
      List<String> names = new ArrayList<>(Arrays.asList(CONFIG_NAMES));
      Collections.shuffle(names, R);
      int stored = c < 10 ? 12 + R.nextInt(3) : c < 20 ? 24 + R.nextInt(3) : R.nextInt(30);
      int added = c < 20 ? R.nextInt(2) : R.nextInt(8);
      List<String> storedKeys = names.subList(0, stored);
      List<String> addedKeys = new ArrayList<>(names.subList(stored, stored + added));
      if (c % 4 == 3 && stored > 0) addedKeys.add(storedKeys.get(R.nextInt(stored)));  // a new value
      List<String> deleted = new ArrayList<>(storedKeys);
      Collections.shuffle(deleted, R);
      deleted = deleted.subList(0, Math.min(stored, c < 20 ? 1 + R.nextInt(8) : R.nextInt(4)));
      deleted.removeAll(addedKeys);
      configAlter(storedKeys, addedKeys, deleted);
    }
  }
}
