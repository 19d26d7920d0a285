// System.nanoTime() per call, for test/bench-programs.sh. HotSpot reads CLOCK_MONOTONIC
// through the C library's clock_gettime, so a preloaded shim serves it unchanged.
// usage: java NanoTimeBench [CALLS]   prints "ns per call: X", the best of 5 timed loops
// of CALLS calls each (after a warm-up long enough for the JIT to compile the loop).
import java.util.Locale;

public class NanoTimeBench {
	public static void main(String[] args) {
		long calls = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
		long sink = 0;
		for (long i = 0; i < 5_000_000L; i++)
			sink += System.nanoTime();
		double best = Double.MAX_VALUE;
		for (int round = 0; round < 5; round++) {
			long t0 = System.nanoTime();
			for (long i = 0; i < calls; i++)
				sink += System.nanoTime();
			long t1 = System.nanoTime();
			best = Math.min(best, (double) (t1 - t0) / calls);
		}
		// sink keeps the calls from being optimized away; its value means nothing.
		System.out.println(String.format(Locale.ROOT, "ns per call: %.2f (sink %d)", best, sink & 1));
	}
}
