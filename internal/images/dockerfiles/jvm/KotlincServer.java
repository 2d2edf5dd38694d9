import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.List;

import org.jetbrains.kotlin.cli.common.CLITool;
import org.jetbrains.kotlin.cli.jvm.K2JVMCompiler;

/**
 * KotlincServer compiles one Kotlin program in a JVM that started, and
 * compiled a sample, before the program arrived. A warm sandbox starts it
 * ahead of its job (the registry's "prestart"); the kotlinc script then hands
 * it the compiler's arguments instead of starting a JVM of its own. Starting
 * the JVM and the compiler (class loading, JIT) is most of a hello world's
 * compile time, so the job pays only for its own program.
 *
 * Protocol, in the directory given as the first argument: the server creates
 * "ready" when it waits for a job, then reads the compiler's arguments, one
 * per line, from the FIFO "request" (the script made it); it writes the
 * compiler's output to "stdout" and "stderr" and its exit code to "status"
 * (renamed into place, so a reader never sees half of it), and exits. One
 * compile per server: a sandbox runs one job.
 */
public final class KotlincServer {
    private static final String SAMPLE = String.join("\n",
            "data class Point(val x: Int, val y: Int)",
            "fun main(args: Array<String>) {",
            "    val xs = (0 until 10).map { it * 2 }.filter { it > 3 }",
            "    val m = mutableMapOf(\"a\" to xs.sum())",
            "    val line = readLine() ?: \"\"",
            "    println(\"$m ${xs.size} ${Point(1, 2)} $line ${args.joinToString(\" \")}\")",
            "}", "");

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        String kotlinHome = args[1];
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;

        // The warm-up: one compile of a sample, output discarded, so that the
        // job's compile finds the compiler's classes loaded and compiled. It
        // is skipped when a job already waits (kotlinc marks the server
        // "taken"): the job's own compile then does that work, once.
        if (!Files.exists(dir.resolve("taken"))) {
            warmUp(dir, kotlinHome);
        }

        Files.createFile(dir.resolve("ready"));
        List<String> request = Files.readAllLines(dir.resolve("request"), StandardCharsets.UTF_8);

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        int code;
        try {
            code = CLITool.doMainNoExit(new K2JVMCompiler(), request.toArray(new String[0])).getCode();
        } catch (Throwable t) {
            t.printStackTrace(System.err);
            code = 3;
        }
        System.out.flush();
        System.err.flush();
        Files.write(dir.resolve("stdout"), out.toByteArray());
        Files.write(dir.resolve("stderr"), err.toByteArray());
        Path tmp = dir.resolve("status.tmp");
        Files.writeString(tmp, code + "\n");
        Files.move(tmp, dir.resolve("status"), StandardCopyOption.ATOMIC_MOVE);
        System.setOut(realOut);
        System.setErr(realErr);
        System.exit(0);
    }

    /** Compiles the sample into dir/warm, discarding the compiler's output. */
    private static void warmUp(Path dir, String kotlinHome) throws Exception {
        Path warm = dir.resolve("warm");
        Files.createDirectories(warm);
        Path sample = warm.resolve("sample.kt");
        Files.writeString(sample, SAMPLE);
        PrintStream sink = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        PrintStream out = System.out;
        PrintStream err = System.err;
        System.setOut(sink);
        System.setErr(sink);
        try {
            CLITool.doMainNoExit(new K2JVMCompiler(), new String[] {
                    "-kotlin-home", kotlinHome, "-d", warm.resolve("out").toString(), sample.toString()});
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }
}
