# The benchmark table, from the guest's "bench: ..." lines (scripts/bench.sh):
#   STACK PATH TEST SIZE ITERATIONS NANOSECONDS   (rdma_rxe_bench)
#   perftest PATH TOOL SIZE FIGURES...            (perftest's result line)
# MB is 10^6 bytes. "ours/C" is how many times faster ours is: bandwidth
# and rate divided, latency inverted, so above 1 means ours is ahead.
function mbs(size, n, ns) { return size * n * 1000 / ns }
$1 == "guest" && $3 == "memcpy" { memcpy = mbs($4, $5, $6); next }
$1 == "perftest" { pt[++npt] = $0; next }
$1 == "ours" || $1 == "theirs" {
	key = $2 " " $3 " " $4
	if (!(key in seen)) { seen[key] = 1; order[++n] = key }
	ns[$1 " " key] = $6; it[$1 " " key] = $5
	next
}
END {
	printf "guest memcpy: %.0f MB/s (the ceiling of a software provider)\n\n", memcpy
	printf "%-9s %-9s %8s %12s %12s %8s\n", "path", "test", "size", "ours", "C rxe", "ours/C"
	for (i = 1; i <= n; i++) {
		split(order[i], k, " ")
		o = ns["ours " order[i]]; t = ns["theirs " order[i]]
		no = it["ours " order[i]]; nt = it["theirs " order[i]]
		if (o == "" || t == "") continue
		if (k[2] == "send_lat") {
			lo = o / no / 2 / 1000; lt = t / nt / 2 / 1000
			printf "%-9s %-9s %8s %9.1f us %9.1f us %8.2f\n", k[1], "lat", k[3], lo, lt, lt / lo
			continue
		}
		bo = mbs(k[3], no, o); bt = mbs(k[3], nt, t)
		printf "%-9s %-9s %8s %7.1f MB/s %7.1f MB/s %8.2f\n", k[1], k[2], k[3], bo, bt, bo / bt
		if (k[2] == "write" && k[3] == 64) {
			ro = no * 1000 / o; rt = nt * 1000 / t
			printf "%-9s %-9s %8s %7.4f Mpps %7.4f Mpps %8.2f\n", k[1], "msg rate", k[3], ro, rt, ro / rt
		}
	}
	if (npt) {
		print ""
		print "perftest on the kernel's rxe (userspace view, loopback, 1000 iterations):"
		for (i = 1; i <= npt; i++) {
			$0 = pt[i]
			if ($3 ~ /_lat$/) printf "  %-12s %8s B: t_avg %s us\n", $3, $4, $10
			else printf "  %-12s %8s B: BW average %s MB/s\n", $3, $4, $8
		}
	}
}
