# The benchmark table, from the guest's "bench: ..." lines (scripts/bench.sh):
#   STACK PATH TEST SIZE ITERATIONS NANOSECONDS   (rdma_rxe_bench; for
#   the cpu-* tests the nanoseconds the CPU was busy, not the wall time)
#   STACK memory qp|cq|mr DEPTH COUNT BYTES        (rdma_rxe_bench: RAM
#   that COUNT objects took)
#   STACK rtrs-Y|N TEST SIZE REQUESTS NANOSECONDS  (rtrs_bench, rtrs_cbench)
#   STACK perftest TOOL SIZE ITERATIONS NANOSECONDS (selftests/bench.sh:
#   perftest's write, read, send bandwidth and send_lat, ours through
#   rdma_rs_uverbs, the kernel's through ib_uverbs)
#   STACK rnbd TEST SIZE REQUESTS NANOSECONDS P50 P99 (selftests/bench.sh:
#   blkload on our rnbd client over our RTRS and rxe, and on the kernel's
#   rnbd over the kernel's RTRS and rdma_rxe; TEST is the load and its
#   queue depth, as randread-qd1; P50 and P99 the requests' latencies, ns)
#   tagged|plain PATH TEST SIZE ITERATIONS NANOSECONDS (rdma_rxe_tm_bench:
#   tagged messages over our rxe, and plain SENDs of the same sizes; their
#   rows compare the two, "tagged/plain" as "ours/C" is read)
#   ... SIZE failed ERRNO                          (a run that failed)
# A workload that ran several times counts by its median. A row with a
# failed run shows no figures, only how many runs of each stack failed. MB is 10^6
# bytes. "ours/C" is how many times faster ours is: bandwidth and rate
# divided, latency inverted, so above 1 means ours is ahead.
#
# "min" and "max" are the spread of that ratio over the runs. The two stacks
# take turns (ours run 1, C run 1, ours run 2, ...), so run i of ours and
# run i of C ran back to back, under the same conditions of the host; each
# such pair gives a ratio of its own, and min and max are the lowest and
# highest of those. Pairing this way keeps a slow spell of the host, which
# falls on both runs of a pair, out of the spread, while a ratio that moves
# from pair to pair shows. With as many runs on each side (as the benchmark
# makes them) the ratio of the medians lies within [min, max]: were every
# pair's ratio above it, ours' runs would beat C's scaled by it run for run,
# and so would ours' median, a contradiction; the same below. A range that
# contains 1 means the runs do not tell the stacks apart.
function mbs(size, n, ns) { return size * n * 1000 / ns }
$1 == "guest" && $2 == "memory" && $3 == "memcpy" { memcpy = mbs($4, $5, $6); next }
$1 == "guest" && $2 == "crc32" {
	crcs = crcs sprintf("%s%s %.1f us", crcs == "" ? "" : ", ", $3, $6 / $5 / 1000)
	next
}
$1 == "tagged" || $1 == "plain" {
	key = $2 " " $3 " " $4
	if (!(key in tseen)) { tseen[key] = 1; torder[++tn] = key }
	rk = $1 " " key
	runs[rk] = runs[rk] " " $6; it[rk] = $5
	next
}
$1 == "ours" || $1 == "theirs" {
	key = $2 " " $3 " " $4
	if (!(key in seen)) { seen[key] = 1; order[++n] = key }
	rk = $1 " " key
	tries[rk]++
	if ($5 == "failed") { failed[rk]++; next }
	# Every run of the workload; the table takes the median.
	runs[rk] = runs[rk] " " $6; it[rk] = $5
	# rnbd: each run's requests (runs differ: they are bounded by time)
	# and latencies.
	if ($2 == "rnbd") { its[rk] = its[rk] " " $5; p50[rk] = p50[rk] " " $7; p99[rk] = p99[rk] " " $8 }
	next
}
# Lowest and highest ours/C over the pairs of runs (see above), into
# lo and hi. For bandwidth, rate and latency alike a pair's ratio is
# (ours' iterations * C's time) / (C's iterations * ours' time).
# Sides A and B (ours and theirs when not given).
function spread(key, a, b,    o, t, no, nt, n, n2, i, r) {
	if (a == "") { a = "ours"; b = "theirs" }
	n = split(runs[a " " key], o, " "); n2 = split(runs[b " " key], t, " ")
	if (n2 < n) n = n2
	no = it[a " " key]; nt = it[b " " key]
	lo = hi = ""
	for (i = 1; i <= n; i++) {
		if (o[i] + 0 == 0 || t[i] + 0 == 0) continue
		r = no * t[i] / (nt * o[i])
		if (lo == "" || r < lo) lo = r
		if (hi == "" || r > hi) hi = r
	}
}
# The rates (requests per second) of runs: REQUESTS and NANOSECONDS,
# lists in the same order.
function rates(reqs, nss,    a, b, n, i, out) {
	n = split(reqs, a, " "); split(nss, b, " ")
	out = ""
	for (i = 1; i <= n; i++) out = out " " a[i] * 1e9 / b[i]
	return out
}
function median(list,    a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n ? a[int((n + 1) / 2)] : ""
}
END {
	if (memcpy != "")
		printf "guest memcpy: %.0f MB/s (the ceiling of a software provider)\n", memcpy
	if (crcs != "")
		printf "guest CRC-32 of a 4112-byte packet (the ICRC, computed on send and on receive): %s\n", crcs
	if (memcpy != "" || crcs != "")
		printf "\n"
	hdr = 0
	for (i = 1; i <= n; i++) {
		split(order[i], k, " ")
		if (k[1] ~ /^rtrs-/ || k[1] == "rnbd" || k[1] == "memory") continue
		o = median(runs["ours " order[i]]); t = median(runs["theirs " order[i]])
		no = it["ours " order[i]]; nt = it["theirs " order[i]]
		if (!hdr) {
			printf "%-9s %-9s %8s %12s %12s %8s %6s %6s\n", "path", "test", "size", "ours", "C rxe", "ours/C", "min", "max"
			hdr = 1
		}
		fo = failed["ours " order[i]] + 0; ft = failed["theirs " order[i]] + 0
		if (fo || ft || o == "" || t == "") {
			printf "%-9s %-9s %8s   FAILED: ours %d of %d runs, C %d of %d\n", k[1], (k[2] == "send_lat" ? "lat" : k[2]), k[3], fo, tries["ours " order[i]], ft, tries["theirs " order[i]]
			failures++
			continue
		}
		spread(order[i])
		if (k[2] == "send_lat") {
			uo = o / no / 2 / 1000; ut = t / nt / 2 / 1000
			printf "%-9s %-9s %8s %9.1f us %9.1f us %8.2f %6.2f %6.2f\n", k[1], "lat", k[3], uo, ut, ut / uo, lo, hi
			continue
		}
		# CPU time per byte: microseconds busy per MB moved, inverted
		# like latency (above 1: ours spends less).
		if (k[2] ~ /^cpu-/) {
			uo = o / 1000 / (k[3] * no / 1e6); ut = t / 1000 / (k[3] * nt / 1e6)
			printf "%-9s %-9s %8s %6.0f us/MB %6.0f us/MB %8.2f %6.2f %6.2f\n", k[1], k[2], k[3], uo, ut, ut / uo, lo, hi
			continue
		}
		bo = mbs(k[3], no, o); bt = mbs(k[3], nt, t)
		printf "%-9s %-9s %8s %7.1f MB/s %7.1f MB/s %8.2f %6.2f %6.2f\n", k[1], k[2], k[3], bo, bt, bo / bt, lo, hi
		if (k[2] == "write" && k[3] == 64) {
			ro = no * 1000 / o; rt = nt * 1000 / t
			printf "%-9s %-9s %8s %7.4f Mpps %7.4f Mpps %8.2f %6.2f %6.2f\n", k[1], "msg rate", k[3], ro, rt, ro / rt, lo, hi
		}
	}
	# Memory: bytes per object (COUNT made at once), inverted like
	# latency (above 1: ours takes less).
	hdr = 0
	for (i = 1; i <= n; i++) {
		split(order[i], k, " ")
		if (k[1] != "memory") continue
		ko = "ours " order[i]; kt = "theirs " order[i]
		fo = failed[ko] + 0; ft = failed[kt] + 0
		if (!hdr) {
			print ""
			print "Memory per object (RAM in use before and after making many; SIZE: queue depth, or pages of an MR):"
			printf "%-9s %-9s %8s %12s %12s %8s %6s %6s\n", "path", "object", "size", "ours", "C rxe", "C/ours", "min", "max"
			hdr = 1
		}
		if (fo || ft || runs[ko] == "" || runs[kt] == "") {
			printf "%-9s %-9s %8s   FAILED: ours %d of %d runs, C %d of %d\n", k[1], k[2], k[3], fo, tries[ko], ft, tries[kt]
			failures++
			continue
		}
		o = median(runs[ko]); t = median(runs[kt])
		if (o <= 0 || t <= 0) {
			printf "%-9s %-9s %8s   no figure: RAM in use did not grow (ours %d, C %d bytes)\n", k[1], k[2], k[3], o, t
			continue
		}
		spread(order[i])
		bo = o / it[ko]; bt = t / it[kt]
		printf "%-9s %-9s %8s %9.0f B %9.0f B %8.2f %6.2f %6.2f\n", k[1], k[2], k[3], bo, bt, bt / bo, lo, hi
	}
	# RTRS: the rows of rtrs-Y and rtrs-N, and the IO rate of the 4 KiB ones.
	hdr = 0
	for (i = 1; i <= n; i++) {
		split(order[i], k, " ")
		if (k[1] !~ /^rtrs-/) continue
		o = median(runs["ours " order[i]]); t = median(runs["theirs " order[i]])
		no = it["ours " order[i]]; nt = it["theirs " order[i]]
		if (o == "" || t == "") continue
		if (!hdr) {
			print ""
			print "RTRS, 64 requests in flight (rtrs-Y, rtrs-N: the server's always_invalidate):"
			printf "%-9s %-9s %8s %12s %12s %8s %6s %6s\n", "path", "test", "size", "ours", "C rtrs", "ours/C", "min", "max"
			hdr = 1
		}
		spread(order[i])
		bo = mbs(k[3], no, o); bt = mbs(k[3], nt, t)
		printf "%-9s %-9s %8s %7.1f MB/s %7.1f MB/s %8.2f %6.2f %6.2f\n", k[1], k[2], k[3], bo, bt, bo / bt, lo, hi
		if (k[3] == 4096)
			printf "%-9s %-9s %8s %7.0f IOPS %7.0f IOPS %8.2f %6.2f %6.2f\n", k[1], k[2], k[3], no * 1e9 / o, nt * 1e9 / t, bo / bt, lo, hi
	}
	# Block devices: each run made as many requests as it could in its
	# time, so a run's figure is its own rate (requests / time), and the
	# row shows the median rate and latencies; min and max are the spread
	# of the ratio of the rates over the pairs of runs.
	hdr = 0
	for (i = 1; i <= n; i++) {
		split(order[i], k, " ")
		if (k[1] != "rnbd") continue
		ko = "ours " order[i]; kt = "theirs " order[i]
		fo = failed[ko] + 0; ft = failed[kt] + 0
		if (!hdr) {
			print ""
			print "Block devices: our rnbd client and server over our RTRS and rxe, the kernel's over its own (blkload, O_DIRECT):"
			printf "%-15s %7s %11s %11s %7s %5s %5s %13s %13s\n", "test", "size", "ours", "C rnbd", "ours/C", "min", "max", "ours p50/p99", "C p50/p99"
			hdr = 1
		}
		if (fo || ft || runs[ko] == "" || runs[kt] == "") {
			printf "%-15s %7s   FAILED: ours %d of %d runs, C %d of %d\n", k[2], k[3], fo, tries[ko], ft, tries[kt]
			failures++
			continue
		}
		ro = rates(its[ko], runs[ko]); rt = rates(its[kt], runs[kt])
		mo = median(ro); mt = median(rt)
		nr = split(ro, a1, " "); n2 = split(rt, a2, " ")
		if (n2 < nr) nr = n2
		lo = hi = ""
		for (j = 1; j <= nr; j++) {
			r = a1[j] / a2[j]
			if (lo == "" || r < lo) lo = r
			if (hi == "" || r > hi) hi = r
		}
		if (k[3] >= 65536)
			fig = sprintf("%6.1f MB/s %6.1f MB/s", mo * k[3] / 1e6, mt * k[3] / 1e6)
		else
			fig = sprintf("%6.0f IOPS %6.0f IOPS", mo, mt)
		printf "%-15s %7s %s %7.2f %5.2f %5.2f %6.0f/%-6.0f %6.0f/%-6.0f\n", k[2], k[3], fig, mo / mt, lo, hi,
			median(p50[ko]) / 1000, median(p99[ko]) / 1000, median(p50[kt]) / 1000, median(p99[kt]) / 1000
	}
	if (hdr)
		print "(latencies in microseconds, submission to completion; IOPS and MB/s: requests ended per second)"
	# Tag matching: tagged messages beside plain SENDs, on our rxe only.
	hdr = 0
	for (i = 1; i <= tn; i++) {
		split(torder[i], k, " ")
		o = median(runs["tagged " torder[i]]); t = median(runs["plain " torder[i]])
		no = it["tagged " torder[i]]; nt = it["plain " torder[i]]
		if (o == "" || t == "") continue
		if (!hdr) {
			print ""
			print "Tag matching on our rxe: tagged messages beside plain SENDs of the same size and depth:"
			printf "%-9s %-9s %8s %12s %12s %8s %6s %6s\n", "path", "test", "size", "tagged", "plain", "tag/plain", "min", "max"
			hdr = 1
		}
		spread(torder[i], "tagged", "plain")
		bo = mbs(k[3], no, o); bt = mbs(k[3], nt, t)
		printf "%-9s %-9s %8s %7.1f MB/s %7.1f MB/s %8.2f %6.2f %6.2f\n", k[1], k[2], k[3], bo, bt, bo / bt, lo, hi
	}
	if (failures)
		printf "\n%d row(s) FAILED: .build/bench/guest.log has the errors of their runs\n", failures
}
