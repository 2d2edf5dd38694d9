# The JVM languages: Java, Kotlin, Clojure, Scala and Groovy share one
# OpenJDK (Debian's default, 21), which is most of the image's size; one
# image for the five saves about 250 MB per language and its install time,
# and start-up does not depend on what else the image holds.
#
# Start-up is the JVM's weak point, and a compile stage is two JVM starts, so
# the image carries one AppCDS archive per compiler or runtime
# (/usr/lib/mcr-cds/*.jsa): the classes javac, kotlinc, clojure.core and
# Groovy load, parsed and verified once at build time by a sample run, mapped
# read-only at run time. With C1 only (-XX:TieredStopAtLevel=1) for the short-lived
# compilers this takes javac from about 1.4 s to 0.6 s, kotlinc from 5 s to
# about 2 s and Clojure's hello world from 1.7 s to under 1 s. The registry's
# commands pass the archives with -Xshare:auto, which falls back to loading
# the classes if an archive cannot be mapped. The archives depend on the exact
# JDK and jars, so they are made here, right after the install.
#
# Groovy runs groovy.ui.GroovyMain on the application class path rather than
# through Debian's launcher (GroovyStarter's own class loader), so that its
# classes come from the archive: 1.3 s for a hello world instead of 2.2 s.
#
# Scala is Debian trixie's 2.11 (2017), which runs on JDK 21. Its compiler
# is the slowest to start of the five: 6-10 s for a hello world here under
# load, and at one CPU its archive takes a small program's compile from about
# 24 s to 16 s.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
# The JDK's post-install script links its manual page, whose directory the
# slim root image leaves out.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends default-jdk-headless kotlin clojure scala groovy \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log /usr/share/man
# Kotlin compiles through /usr/lib/mcr-kotlinc/kotlinc. A warm sandbox starts
# the compiler ahead of its job (kotlinc-server, the registry's "prestart"),
# so a hello world's compile takes a few hundred milliseconds instead of the
# JVM's and compiler's start-up; see KotlincServer.java.
COPY KotlincServer.java kotlin-env kotlinc kotlinc-server /usr/lib/mcr-kotlinc/
RUN cd /usr/lib/mcr-kotlinc \
 && javac -cp /usr/share/java/kotlin-compiler.jar -d . KotlincServer.java \
 && jar cf kotlinc-server.jar KotlincServer.class \
 && rm KotlincServer.java KotlincServer.class \
 && chmod 0755 kotlinc kotlinc-server && chmod 0644 kotlin-env kotlinc-server.jar
RUN mkdir -p /usr/lib/mcr-cds /tmp/cds/java /tmp/cds/kotlin \
 && cd /tmp/cds \
 && printf '%s\n' \
      'import java.util.*;' \
      'import java.util.stream.*;' \
      'public class Main {' \
      '    record Point(int x, int y) {}' \
      '    public static void main(String[] args) throws Exception {' \
      '        var sc = new Scanner(System.in);' \
      '        List<Integer> xs = IntStream.range(0, 10).boxed().collect(Collectors.toList());' \
      '        Map<String, Integer> m = new HashMap<>();' \
      '        m.put("a", xs.stream().mapToInt(Integer::intValue).sum());' \
      '        System.out.println(String.format("%s %d %s", m, xs.size(), new Point(1, 2)));' \
      '    }' \
      '}' > Main.java \
 && javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -J-XX:ArchiveClassesAtExit=/usr/lib/mcr-cds/javac.jsa -J-Xlog:cds=off -J-Xlog:cds+dynamic=off \
      -d /tmp/cds/java Main.java \
 && printf '%s\n' \
      'data class Point(val x: Int, val y: Int)' \
      'fun main(args: Array<String>) {' \
      '    val xs = (0 until 10).map { it * 2 }.filter { it > 3 }' \
      '    val m = mutableMapOf("a" to xs.sum())' \
      '    val line = readLine() ?: ""' \
      '    println("$m ${xs.size} ${Point(1, 2)} $line ${args.joinToString(" ")}")' \
      '}' > main.kt \
 && { MCR_KOTLINC_CDS="-XX:ArchiveClassesAtExit=/usr/lib/mcr-cds/kotlinc.jsa -Xlog:cds=off -Xlog:cds+dynamic=off" \
        /usr/lib/mcr-kotlinc/kotlinc-server & server=$!; \
      until [ -s /tmp/.mcr-kotlinc/pid ]; do sleep 0.1; done; \
      /usr/lib/mcr-kotlinc/kotlinc -d /tmp/cds/kotlin main.kt && wait $server; } \
 && rm -rf /tmp/.mcr-kotlinc \
 && /usr/lib/mcr-kotlinc/kotlinc -d /tmp/cds/kotlin2 main.kt \
 && printf '%s\n' \
      '(require (quote [clojure.string :as str]))' \
      '(defn -main [& args] (println (str/join " " (map inc (range 10))) (reduce + (filter even? (range 100)))))' \
      '(-main)' > main.clj \
 && java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit=/usr/lib/mcr-cds/clojure.jsa -Xlog:cds=off -Xlog:cds+dynamic=off \
      -cp /usr/share/java/clojure.jar clojure.main main.clj \
 && printf '%s\n' \
      'import groovy.json.JsonOutput' \
      'def xs = (1..10).collect { it * 2 }.findAll { it > 3 }' \
      'def m = [a: xs.sum(), b: xs.size()]' \
      'println "${JsonOutput.toJson(m)} ${xs.join(",")} ${m.collectEntries { k, v -> [(k.toUpperCase()): v] }}"' > main.groovy \
 && java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit=/usr/lib/mcr-cds/groovy.jsa -Xlog:cds=off -Xlog:cds+dynamic=off \
      -cp /usr/share/groovy/lib/groovy-2.4.21.jar:/usr/share/groovy/lib/groovy-json.jar:/usr/share/groovy/lib/groovy-xml.jar groovy.ui.GroovyMain main.groovy \
 && java -Xshare:on -XX:SharedArchiveFile=/usr/lib/mcr-cds/groovy.jsa -XX:+UseSerialGC -cp /usr/share/groovy/lib/groovy-2.4.21.jar:/usr/share/groovy/lib/groovy-json.jar:/usr/share/groovy/lib/groovy-xml.jar groovy.ui.GroovyMain -e 'println "groovy archive ok"' \
 && printf '%s\n' \
      'object Main extends App {' \
      '  sealed trait T; case class A(x: Int) extends T; case object B extends T' \
      '  implicit class Twice(val i: Int) extends AnyVal { def twice: Int = i * 2 }' \
      '  val xs = List(A(1), B, A(3)).collect { case A(x) => x.twice }' \
      '  val m = xs.groupBy(_ % 3).mapValues(_.sum)' \
      '  for ((k, v) <- m.toSeq.sorted; if v > 0) println(f"$k%d -> ${v.toDouble}%.1f")' \
      '  println(s"${xs.mkString(",")} ${Option(args).map(_.length).getOrElse(0)} ${scala.io.StdIn.readLine()}")' \
      '}' > main.scala \
 && mkdir -p /tmp/cds/scala \
 && java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m -XX:ArchiveClassesAtExit=/usr/lib/mcr-cds/scalac.jsa -Xlog:cds=off -Xlog:cds+dynamic=off \
      -Dscala.usejavacp=true -cp /usr/share/java/scala-compiler-2.11.jar:/usr/share/java/scala-library-2.11.jar:/usr/share/java/scala-reflect-2.11.jar:/usr/share/java/scala-xml_2.11.jar scala.tools.nsc.Main -d /tmp/cds/scala main.scala </dev/null \
 && java -Xshare:on -XX:SharedArchiveFile=/usr/lib/mcr-cds/scalac.jsa -XX:+UseSerialGC -Dscala.usejavacp=true -cp /usr/share/java/scala-compiler-2.11.jar:/usr/share/java/scala-library-2.11.jar:/usr/share/java/scala-reflect-2.11.jar:/usr/share/java/scala-xml_2.11.jar scala.tools.nsc.Main -version \
 && java -Xshare:on -XX:SharedArchiveFile=/usr/lib/mcr-cds/clojure.jsa -XX:+UseSerialGC -cp /usr/share/java/clojure.jar clojure.main -e '(println "clojure archive ok")' \
 && javac -J-Xshare:on -J-XX:SharedArchiveFile=/usr/lib/mcr-cds/javac.jsa -J-XX:+UseSerialGC -version \
 && cd / && rm -rf /tmp/cds /tmp/hsperfdata_root \
 && chmod 0444 /usr/lib/mcr-cds/*.jsa
USER 10001:10001
