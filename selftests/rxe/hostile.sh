#!/bin/sh
# Hostile input from the wire: packets made by pktinject (tools/pktinject)
# from rxa's namespace at our device rxb (10.78.3.2, fd00:7b::2), first on
# an idle device, then while rdma_rxe_soak_test runs RC and UD traffic
# between rxa (10.78.3.1) and rxb. Malformed packets (bad ICRC, truncated,
# too short, unknown opcodes, bad pad, too long) are dropped and counted
# as malformed before any QP sees them; well-formed but wrong ones (bad
# P_Key, wrong QPN, a UD header at an RC QP, WRITEs and READs with keys
# and addresses nobody gave out, at PSNs far from the connection's) are
# dropped or answered without harm, each counted by its reason; the
# traffic under attack completes with every byte checked; nothing splats.
# Then QP1 (qp1 below): forced out of RTS and brought back, and hostile
# MADs and CM messages at rxb's QP1 while connections are made and torn
# down through it.
. ../lib/rxe_pair.sh

malformed="bad-icrc truncated short unknown-opcode bad-pad too-long"

# MTU 9000, so that a too-long packet (over 4096 bytes of payload) leaves
# whole, with DF, over IPv4 too.
setup() {
	rxe_pair -m 9000 hoa ha hob hb 10.78.3 fd00:7b
}

inject() { # SRC DST KIND COUNT [ARGS...]
	_src=$1 _dst=$2 _kind=$3 _count=$4
	shift 4
	ip netns exec hoa pktinject --src "$_src" --dst "$_dst" --kind "$_kind" \
		--count "$_count" "$@" > /dev/null
}

# Every malformed kind, over IPv4 and IPv6, at an idle device: each packet
# counted once as malformed, none taken by a QP.
idle_malformed() {
	m0=$(rxe_counter rxb rx_drop_malformed) d0=$(rxe_counter rxb rx_dropped)
	n=0
	for k in $malformed; do
		inject 10.78.3.1 10.78.3.2 "$k" 50 && inject fd00:7b::1 fd00:7b::2 "$k" 50 || return 1
		n=$((n + 100))
	done
	sleep 1
	m=$(($(rxe_counter rxb rx_drop_malformed) - m0)) d=$(($(rxe_counter rxb rx_dropped) - d0))
	if ! { [ "$m" = "$n" ] && [ "$d" = "$n" ] && [ "$(rxe_counter rxb rx_packets)" = 0 ]; }; then
		echo "malformed $m, dropped $d of $n"
		tr '\n' ' ' < "$rxe_cfs/rxb/counters"
		return 1
	fi
}

# The attack while the soak runs, at its QPs on rxb (it names their QPNs);
# the soak's PSNs start at 0xffff00, far from 0x400000. The soak runs 8 s:
# the attacks on its QPs come first, those that count on a live QP (bad
# P_Key, a UD header at an RC QP) before the rest.
# Loads rdma_rxe_soak_test in the background ($soak) and waits until its
# RC pairs exist: it names the responders' first and last QPN ($first,
# $last).
start_soak() {
	dmesg -c > /dev/null
	modprobe rdma_rxe_soak_test > "$tmpd/soak.err" 2>&1 &
	soak=$!
	qpns=
	for _ in $(seq 300); do
		qpns=$(dmesg | sed -n 's/.*soak: responder QPNs //p' | tail -1)
		[ -n "$qpns" ] && break
		sleep 0.1
	done
	[ -n "$qpns" ] || { wait "$soak"; cat "$tmpd/soak.err"; return 1; }
	echo "# responder QPNs: $qpns"
	first=${qpns% *} last=${qpns#* }
}

under_traffic() {
	# What needs the soak's QPs alive goes first: the bad Q_Keys, both
	# batches at once as soon as the QPs exist (the RC soak runs 8 s, and
	# under its load each injection takes seconds under TCG). A packet
	# whose QP lived is a QP drop (rx_drop_qp); one whose QP was already
	# gone, a no-QP drop: every one must be counted as one or the other.
	# If the RC soak ended before they were in (it says "requests
	# checked") and not all met their QP, the soak runs again, three times
	# at most. Then the bad P_Keys (dropped before any QP is looked up);
	# malformed packets need no QP and come last.
	p0=$(rxe_counter rxb rx_drop_pkey) q0=$(rxe_counter rxb rx_drop_no_qp)
	m0=$(rxe_counter rxb rx_drop_malformed)
	for attempt in 1 2 3; do
		r0=$(rxe_counter rxb rx_drop_qp) n0=$(rxe_counter rxb rx_drop_no_qp)
		start_soak || return 1
		inject 10.78.3.1 10.78.3.2 bad-qkey 20 --qpn "$first" --qkey 0x600d &
		i1=$!
		inject 10.78.3.1 10.78.3.2 bad-qkey 20 --qpn "$last" --qkey 0x600d &
		i2=$!
		wait "$i1" && wait "$i2" || return 1
		sleep 0.2
		r=$(($(rxe_counter rxb rx_drop_qp) - r0))
		n=$(($(rxe_counter rxb rx_drop_no_qp) - n0))
		[ "$r" -ge 40 ] && break
		dmesg | grep -q 'rdma_rxe_soak_test: soak: .* requests checked' || break
		echo "# the RC soak ended before its bad Q_Keys were in (attempt $attempt: $r met their QP)"
		[ "$attempt" = 3 ] && break
		wait "$soak" || { cat "$tmpd/soak.err"; return 1; }
		rmmod rdma_rxe_soak_test
	done
	echo "# bad Q_Keys: $r dropped at their QP, $n more without one"
	[ $((r + n)) -ge 40 ] || { echo "# bad Q_Keys not counted: $r + $n of 40"; return 1; }
	inject 10.78.3.1 10.78.3.2 bad-pkey 200 --qpn "$first" --psn 0x400000 || return 1
	p=$(($(rxe_counter rxb rx_drop_pkey) - p0))
	for qpn in "$first" "$last"; do
		inject 10.78.3.1 10.78.3.2 bad-rkey-write 20 --qpn "$qpn" --psn 0x400000 &&
			inject 10.78.3.1 10.78.3.2 oob-write 20 --qpn "$qpn" --psn 0x400000 \
				--va 0xffffffffffff0000 --len 4096 &&
			inject 10.78.3.1 10.78.3.2 bad-read 20 --qpn "$qpn" --psn 0x400000 \
				--len 0xfff0 || return 1
	done
	inject 10.78.3.1 10.78.3.2 wrong-qpn 200 --qpn 0x7f0000 || return 1
	for qpn in "$first" "$last"; do
		for k in $malformed; do
			inject 10.78.3.1 10.78.3.2 "$k" 20 --qpn "$qpn" || return 1
		done
	done
	inject 10.78.3.1 10.78.3.2 random 5000 --qpn 0x7f0001 --seed 7 &&
		inject fd00:7b::1 fd00:7b::2 random 5000 --qpn 0x7f0002 --seed 8 || return 1
	sleep 1
	q=$(($(rxe_counter rxb rx_drop_no_qp) - q0))
	m=$(($(rxe_counter rxb rx_drop_malformed) - m0))
	wait "$soak" || { cat "$tmpd/soak.err"; dmesg | tail -30; return 1; }
	dmesg | sed -n 's/^.*: ktap: /# /p; s/^.*rdma_rxe_soak_test: \(soak\|ud\): /# \1: /p'
	echo "# pkey $p no_qp $q malformed $m qp $r"
	# The P_Key drops are exact (nothing else has a wrong P_Key); the rest
	# at least what was aimed at them (the Q_Keys: above).
	if ! { [ "$p" = 200 ] && [ "$q" -ge 200 ] && [ "$m" -ge $((2 * 6 * 20)) ]; }; then
		tr '\n' ' ' < "$rxe_cfs/rxb/counters"
		return 1
	fi
}

# Two forged 1 MiB READs, back to back from rxa's address, at a responder
# that takes one at a time (rdma_rxe_resources_test says where): the first
# is queued, the second NAKed as beyond max_dest_rd_atomic and counted once.
# Then the module's next case (reth_len) names another responder, and one
# forged READ whose RETH asks for 2^31 + 1 bytes, with a key and address
# good for 64 KiB, goes to it: refused as an invalid request before the key
# is looked at (the QP then in error, as the C rxe leaves an RC QP after an
# invalid request; the module checks the states), which reth_len below
# finds counted once in length_err. The module goes on with the cases of
# out_of_place below.
read_limit() {
	e0=$(rxe_counter rxb rd_atomic_exceeded)
	rxe_counter rxb length_err > "$tmpd/length_err0"
	dmesg -c > /dev/null
	modprobe rdma_rxe_resources_test > "$tmpd/res.err" 2>&1 &
	mod=$!
	# For out_of_place (each check runs in a subshell of its own).
	echo "$mod" > "$tmpd/res.pid"
	where=
	for _ in $(seq 300); do
		where=$(dmesg | sed -n 's/.*resources: //p' | tail -1)
		[ -n "$where" ] && break
		sleep 0.1
	done
	[ -n "$where" ] || { wait "$mod"; cat "$tmpd/res.err"; return 1; }
	# shellcheck disable=SC2086 # "qpn Q psn P rkey K va V", split on purpose
	set -- $where
	inject 10.78.3.1 10.78.3.2 bad-read 2 --qpn "$2" --psn "$4" --psn-step 1024 \
		--rkey "$6" --va "$8" --len 0 --dma-len 0x100000 || return 1
	where=
	for _ in $(seq 600); do
		where=$(dmesg | sed -n 's/.*reth_len: //p' | tail -1)
		[ -n "$where" ] && break
		sleep 0.1
	done
	[ -n "$where" ] || { wait "$mod"; cat "$tmpd/res.err"; dmesg | tail -20; return 1; }
	# The module named reth_len's QP once read_limit's had failed.
	[ "$(rxe_counter rxb rd_atomic_exceeded)" = $((e0 + 1)) ] ||
		{ tr '\n' ' ' < "$rxe_cfs/rxb/counters"; return 1; }
	# shellcheck disable=SC2086 # as above
	set -- $where
	inject 10.78.3.1 10.78.3.2 bad-read 1 --qpn "$2" --psn "$4" \
		--rkey "$6" --va "$8" --len 0 --dma-len 0x80000001
}

# Requests out of place at live responders of rdma_rxe_resources_test
# (its cases after reth_len), each forged from rxa's address at the QP and
# PSN the module names (pktinject rc-op, the BTH opcode in hex), and the
# answer rxa gets, as the C rxe (rxe_resp.c) gives it:
#
#   case                       sent at PSN P            answers (psn syndrome)
#   missing_first              SEND MIDDLE              P 0x61 (NAK invalid
#                                                       request: missing first)
#   missing_first_write        WRITE LAST               P 0x61
#   missing_last               SEND FIRST, SEND ONLY    P 0x1f (ACK), P+1 0x61
#                                                       (missing last)
#   missing_last_write         WRITE FIRST, SEND FIRST  P 0x1f, P+1 0x61
#   misaligned_atomic          COMPARE_SWAP at VA + 4   P 0x61 (misaligned)
#   misaligned_atomic_bad_key  FETCH_ADD at VA + 4,     P 0x62 (NAK remote
#                              a bad key                access error: the key
#                                                       is checked first)
#   stale_duplicate_read       SEND FIRST at P, a READ  P 0x1f, P+1 0x1f MSN 1
#                              at P-1 with a bad key    (the duplicate READ,
#                              (a duplicate), SEND      holding no response,
#                              LAST at P+1              dropped unanswered)
#
# (VA + 4 is the address the module names for those two: an 8-byte
# atomic inside the MR, misaligned.) Every answer but the last carries
# MSN 0, and after each NAK the responder is in the error state (the
# module checks it, its completions and its memory); after the last case
# it is in RTS, its SEND received whole. pktcap on rxa's netdev records
# the answers. On rxb the 11 packets are received (rcvd_pkts), 10 taken
# (rx_packets), the duplicate READ counted as such and dropped at its QP
# (duplicate_request, rx_dropped, rx_drop_qp), the SEND received
# (rdma_recvs), 10 answers sent (sent_pkts), and no other drop or error
# counter moves (the C rxe counts none of the others); on rxa each
# answer, for no request of its requester's, is dropped (rx_drop_qp).
# The module, started by read_limit, is not this shell's child: it has
# passed when its last case says ok and none says not ok.
res_done() {
	for _ in $(seq 600); do
		kill -0 "$mod" 2>/dev/null || break
		sleep 0.1
	done
	dmesg | grep -q "rdma_rxe_resources_test: ktap: ok 9 stale_duplicate_read" &&
		! dmesg | grep -q "rdma_rxe_resources_test: ktap: not ok"
}

out_of_place() {
	mod=$(cat "$tmpd/res.pid") || return 1
	_cases="missing_first missing_first_write missing_last missing_last_write misaligned_atomic misaligned_atomic_bad_key stale_duplicate_read"
	_cnt="rcvd_pkts rx_packets sent_pkts rx_dropped rx_drop_qp out_of_seq_request duplicate_request length_err rd_atomic_exceeded send_rnr_err rdma_recvs"
	_want_b="11 10 10 1 1 0 1 0 0 0 1" _want_a="10 0 0 10 10 0 0 0 0 0 0"
	where=
	for c in $_cases; do
		for _ in $(seq 600); do
			where=$(dmesg | sed -n "s/.*: $c: //p" | tail -1)
			[ -n "$where" ] && break
			kill -0 "$mod" 2>/dev/null || break
			sleep 0.1
		done
		[ -n "$where" ] || { res_done; cat "$tmpd/res.err"; dmesg | tail -20; return 1; }
		if [ "$c" = missing_first ]; then
			# From here on, every packet of rxa's and rxb's is the cases'.
			b0=$(for n in $_cnt; do rxe_counter rxb "$n"; done)
			a0=$(for n in $_cnt; do rxe_counter rxa "$n"; done)
			ip netns exec hoa pktcap ha 10 60 > "$tmpd/answers.hex" &
			cap=$!
			sleep 0.3
		fi
		# shellcheck disable=SC2086 # "qpn Q psn P rkey K va V"
		set -- $where
		q=$2 p=$4 k=$6 va=$8
		op() { # OPCODE [ARGS...]
			_o=$1
			shift
			inject 10.78.3.1 10.78.3.2 rc-op 1 --qpn "$q" --op "$_o" "$@"
		}
		case $c in
		missing_first) op 0x01 --psn "$p" --len 1024 ;;
		missing_first_write) op 0x08 --psn "$p" --len 64 ;;
		missing_last) op 0x00 --psn "$p" --len 1024 && op 0x04 --psn $((p + 1)) --len 64 ;;
		missing_last_write)
			op 0x06 --psn "$p" --len 1024 --dma-len 4096 --rkey "$k" --va "$va" &&
				op 0x00 --psn $((p + 1)) --len 1024
			;;
		misaligned_atomic) op 0x13 --psn "$p" --rkey "$k" --va "$va" ;;
		misaligned_atomic_bad_key) op 0x14 --psn "$p" --rkey $((k ^ 0xff)) --va "$va" ;;
		stale_duplicate_read)
			op 0x00 --psn "$p" --len 1024 &&
				op 0x0c --psn $((p - 1)) --rkey $((k ^ 0xff)) --va "$va" --len 0 --dma-len 64 &&
				op 0x02 --psn $((p + 1)) --len 64
			;;
		esac || { res_done; return 1; }
	done
	_ok=1
	res_done || _ok=0
	wait "$cap"
	dmesg | sed -n 's/^.*: ktap: /# /p'
	[ "$_ok" = 1 ] || { cat "$tmpd/res.err"; dmesg | tail -20; return 1; }
	# The answers: opcode, PSN, AETH syndrome and MSN of each (IPv4, BTH at
	# byte 28); the module's PSNs are 0x123500, 0x123600, ... 0x123b00.
	got=$(while read -r h; do
		echo "$(echo "$h" | cut -c57-58) $(echo "$h" | cut -c75-80) $(echo "$h" | cut -c81-82) $(echo "$h" | cut -c83-88)"
	done < "$tmpd/answers.hex" | tr '\n' ' ')
	want="11 123500 61 000000 11 123600 61 000000 11 123700 1f 000000 11 123701 61 000000 "
	want="${want}11 123800 1f 000000 11 123801 61 000000 11 123900 61 000000 11 123a00 62 000000 "
	want="${want}11 123b00 1f 000000 11 123b01 1f 000001 "
	echo "# answers (opcode psn syndrome msn): $got"
	[ "$got" = "$want" ] || { echo "want $want"; return 1; }
	_bad=0
	for dev in rxb rxa; do
		if [ "$dev" = rxb ]; then _w=$_want_b _0=$b0; else _w=$_want_a _0=$a0; fi
		# shellcheck disable=SC2086 # one expected delta a counter
		set -- $_w
		for n in $_cnt; do
			v0=$(echo "$_0" | head -n 1)
			_0=$(echo "$_0" | tail -n +2)
			d=$(($(rxe_counter "$dev" "$n") - v0))
			[ "$d" = "$1" ] || { echo "$dev $n: $d more, want $1"; _bad=1; }
			shift
		done
	done
	[ "$_bad" = 0 ] || { tr '\n' ' ' < "$rxe_cfs/rxb/counters"; return 1; }
}

# The READ over 2^31 that read_limit sent: counted once as a length error.
reth_len() {
	l0=$(cat "$tmpd/length_err0")
	[ "$(rxe_counter rxb length_err)" = $((${l0:-0} + 1)) ] ||
		{ tr '\n' ' ' < "$rxe_cfs/rxb/counters"; return 1; }
}

# QP1 (rdma_rxe_qp1_test): forced out of RTS on rxb, then on rxa, and
# brought back by the MAD layer, counted once each (in sysfs too), a
# connection made after each; then connections made and torn down for a
# while, every one of them succeeding, while pktinject sends rxb's QP1
# MADs and CM messages, malformed and well-formed but wrong
# (tools/pktinject, the QP1 kinds). What happens to each, counted by
# reason on rxb:
#
#   mad-short (every length below 256)   MAD rx_bad
#   mad-bad-version                      MAD rx_bad
#   mad-long (257 to 1024 bytes)         rxe length_err (the receive kept)
#   mad-unknown-class (GET, SET)         MAD rx_unmatched, answered with
#                                        status "unsupported method/attribute"
#                                        (rxa: rx_unmatched, a response to
#                                        nobody)
#   cm-unknown-attr                      CM cm_rx_drops/unknown_attr
#   cm-msg, 11 messages in turn, random comm IDs, private data of every
#   length: a REQ rejected (REJ); a DREQ answered (DREP) as the C CM
#   does, counted with REP, MRA, REJ, RTU and DREP in
#   cm_rx_drops/unknown_comm_id (a REP gets no REJ: the C CM sends none);
#   a SIDR REQ (service ID 0, nobody's) answered with a SIDR REP of
#   status UNSUPPORTED as the C CM answers it (rxa, where it goes,
#   counts it received and drops it: no SIDR REQ of its own asked); a
#   SIDR REP (no SIDR REQ of rxb's asked) in cm_rx_drops/unknown_comm_id
#   too; LAP and APR in cm_rx_drops/unsupported
#   cm-msg with a bad P_Key / Q_Key      rxe rx_drop_pkey / rx_drop_qkey
#
# None of these drops is logged (the counters are the record).
qp1() {
	mb=/sys/class/rdma_rs/rxb/ports/1/mad ma=/sys/class/rdma_rs/rxa/ports/1/mad
	cb=/sys/class/rdma_rs/rxb/ports/1
	b0=$(cat "$mb/qp1_recoveries") && a0=$(cat "$ma/qp1_recoveries") || return 1
	dmesg -c > /dev/null
	modprobe rdma_rxe_qp1_test > "$tmpd/qp1.err" 2>&1 &
	mod=$!
	looping=
	for _ in $(seq 1800); do
		dmesg | grep -q "qp1 test: looping" && { looping=1; break; }
		kill -0 "$mod" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$looping" ] || { wait "$mod"; cat "$tmpd/qp1.err"; dmesg | tail -30; return 1; }
	bad0=$(cat "$mb/rx_bad") unm0=$(cat "$mb/rx_unmatched") aunm0=$(cat "$ma/rx_unmatched")
	len0=$(rxe_counter rxb length_err) pk0=$(rxe_counter rxb rx_drop_pkey) qk0=$(rxe_counter rxb rx_drop_qkey)
	ua0=$(cat "$cb/cm_rx_drops/unknown_attr") us0=$(cat "$cb/cm_rx_drops/unsupported")
	uc0=$(cat "$cb/cm_rx_drops/unknown_comm_id") mf0=$(cat "$cb/cm_rx_drops/malformed")
	rej0=$(cat "$cb/cm_tx_msgs/rej") dup0=$(cat "$cb/cm_rx_duplicates/dreq")
	sidr0=$(cat "$cb/cm_tx_msgs/sidr_rep") ca=/sys/class/rdma_rs/rxa/ports/1
	asr0=$(cat "$ca/cm_rx_msgs/sidr_rep")
	rounds=100
	if ! { inject 10.78.3.1 10.78.3.2 mad-short 256 &&
		inject 10.78.3.1 10.78.3.2 mad-bad-version 50 &&
		inject 10.78.3.1 10.78.3.2 mad-long 50 &&
		inject 10.78.3.1 10.78.3.2 mad-unknown-class 90 &&
		inject 10.78.3.1 10.78.3.2 cm-unknown-attr 80 &&
		inject 10.78.3.1 10.78.3.2 cm-msg $((11 * rounds)) &&
		inject fd00:7b::1 fd00:7b::2 cm-msg 110 --seed 2 &&
		inject 10.78.3.1 10.78.3.2 cm-msg 50 --pkey 0x1234 &&
		inject 10.78.3.1 10.78.3.2 cm-msg 50 --qkey 0x600d; }; then
		wait "$mod"
		return 1
	fi
	rounds=$((rounds + 10))
	_ok=1
	wait "$mod" || _ok=0
	dmesg | sed -n 's/^.*: ktap: /# /p; s/^.*rdma_rxe_qp1_test: qp1 test: /# /p'
	[ "$_ok" = 1 ] || { cat "$tmpd/qp1.err"; dmesg | tail -30; return 1; }
	rmmod rdma_rxe_qp1_test
	if [ "$(cat "$mb/qp1_recoveries")" != $((b0 + 1)) ] || [ "$(cat "$ma/qp1_recoveries")" != $((a0 + 1)) ]; then
		grep . "$mb"/* "$ma"/*
		return 1
	fi
	dmesg | grep -q "rxb port 1: QP1 had left RTS; brought back" ||
		{ echo "no log of the recovery"; return 1; }
	sleep 1
	got() { # NAME VALUE WANT
		[ "$2" = "$3" ] || { echo "$1: $2, want $3"; _bad=1; }
	}
	_bad=0
	got "mad rx_bad" $(($(cat "$mb/rx_bad") - bad0)) $((256 + 50))
	got "mad rx_unmatched" $(($(cat "$mb/rx_unmatched") - unm0)) 90
	got "rxa mad rx_unmatched (the answers)" $(($(cat "$ma/rx_unmatched") - aunm0)) 90
	got "rxe length_err" $(($(rxe_counter rxb length_err) - len0)) 50
	got "rxe rx_drop_pkey" $(($(rxe_counter rxb rx_drop_pkey) - pk0)) 50
	got "rxe rx_drop_qkey" $(($(rxe_counter rxb rx_drop_qkey) - qk0)) 50
	got "cm unknown_attr" $(($(cat "$cb/cm_rx_drops/unknown_attr") - ua0)) 80
	got "cm unsupported" $(($(cat "$cb/cm_rx_drops/unsupported") - us0)) $((2 * rounds))
	got "cm unknown_comm_id" $(($(cat "$cb/cm_rx_drops/unknown_comm_id") - uc0)) $((7 * rounds))
	got "cm tx sidr_rep" $(($(cat "$cb/cm_tx_msgs/sidr_rep") - sidr0)) "$rounds"
	got "rxa cm rx sidr_rep (the answers)" $(($(cat "$ca/cm_rx_msgs/sidr_rep") - asr0)) "$rounds"
	got "drops logged" "$(dmesg | grep -c 'rdma cm: .*dropped')" 0
	got "cm malformed" $(($(cat "$cb/cm_rx_drops/malformed") - mf0)) 0
	got "cm rx_duplicates dreq" $(($(cat "$cb/cm_rx_duplicates/dreq") - dup0)) "$rounds"
	got "cm tx rej" $(($(cat "$cb/cm_tx_msgs/rej") - rej0)) "$rounds"
	[ "$_bad" = 0 ] || { grep . "$mb"/* "$cb"/cm_rx_drops/*; tr '\n' ' ' < "$rxe_cfs/rxb/counters"; return 1; }
}

# CM messages at live connections (rdma_rxe_cm_live_test, which checks
# what each did): pktinject's cm-at from rxa's address at rxb's end of a
# connection held established, then at one whose REQ rxb holds, then at
# rxb's end of one whose REQ (rxb's) a listener on rxa holds. X is a
# comm ID that is not the peer's. The module names each case's IDs,
# QPNs and rxa's node GUID; it waits for these messages and says what
# moved.
cm_at() { # MSG ARGS...
	_m=$1
	shift
	inject 10.78.3.1 10.78.3.2 cm-at 1 --msg "$_m" "$@"
}

live_wait() { # CASE: sets ours theirs qpn peer_qpn guid x
	_l=
	for _ in $(seq 1200); do
		_l=$(dmesg | sed -n "s/.*cm live: $1 ours //p" | tail -1)
		[ -n "$_l" ] && break
		kill -0 "$mod" 2>/dev/null || return 1
		sleep 0.1
	done
	[ -n "$_l" ] || return 1
	# shellcheck disable=SC2086 # "O theirs T qpn Q peer_qpn P guid G"
	set -- $_l
	ours=$1 theirs=$3 qpn=$5 peer_qpn=$7 guid=$9
	x=$(((theirs ^ 0x5a5a5a5a) | 0x40000000))
}

cm_live() {
	dmesg -c > /dev/null
	modprobe rdma_rxe_cm_live_test > "$tmpd/live.err" 2>&1 &
	mod=$!
	if ! { live_wait established &&
		cm_at rej --of req --local-id "$x" --remote-id "$ours" &&
		cm_at rej --of other --local-id "$x" --remote-id "$ours" &&
		cm_at dreq --local-id "$x" --remote-id "$ours" --msg-qpn "$qpn" &&
		cm_at dreq --local-id "$theirs" --remote-id "$ours" --msg-qpn $((qpn ^ 1)) &&
		cm_at rtu --local-id "$theirs" --remote-id "$ours" &&
		cm_at rtu --local-id "$x" --remote-id "$ours" &&
		cm_at rep --local-id "$x" --remote-id "$ours" --msg-qpn "$peer_qpn" --guid "$guid" &&
		cm_at mra --of rep --local-id "$x" --remote-id "$ours" &&
		cm_at drep --local-id "$x" --remote-id "$ours" &&
		cm_at drep --local-id "$theirs" --remote-id "$ours" &&
		cm_at rep --local-id "$theirs" --remote-id "$ours" --msg-qpn "$peer_qpn" --guid "$guid" &&
		cm_at req --local-id "$theirs" --msg-qpn "$peer_qpn" --guid "$guid" &&
		live_wait stale &&
		cm_at req --local-id $((x + 2)) --msg-qpn "$peer_qpn" --guid "$guid" &&
		live_wait req_rcvd &&
		cm_at rej --of req --local-id "$x" --remote-id "$ours" &&
		cm_at mra --of req --local-id "$x" --remote-id "$ours" &&
		cm_at rtu --local-id "$theirs" --remote-id "$ours" &&
		cm_at dreq --local-id "$theirs" --remote-id "$ours" --msg-qpn "$qpn" &&
		live_wait req_sent &&
		cm_at rej --of other --local-id "$x" --remote-id "$ours" &&
		cm_at mra --of rep --local-id "$x" --remote-id "$ours" &&
		cm_at dreq --local-id "$x" --remote-id "$ours" --msg-qpn "$qpn" &&
		cm_at rtu --local-id "$x" --remote-id "$ours"; }; then
		wait "$mod"
		cat "$tmpd/live.err"
		dmesg | tail -30
		return 1
	fi
	_ok=1
	wait "$mod" || _ok=0
	dmesg | sed -n 's/^.*: ktap: /# /p; s/^.*rdma_rxe_cm_live_test: cm live: /# /p'
	[ "$_ok" = 1 ] || { cat "$tmpd/live.err"; dmesg | tail -30; return 1; }
	rmmod rdma_rxe_cm_live_test
}

# A SIDR REQ for a service ID nobody listens on, from rxa's address: rxb
# answers with a SIDR REP (status UNSUPPORTED), which reaches rxa (whose
# CM counts it and drops it: it answers no SIDR REQ of rxa's); nothing is
# logged.
sidr() {
	cb=/sys/class/rdma_rs/rxb/ports/1 ca=/sys/class/rdma_rs/rxa/ports/1
	rq0=$(cat "$cb/cm_rx_msgs/sidr_req") rp0=$(cat "$cb/cm_tx_msgs/sidr_rep")
	as0=$(cat "$ca/cm_rx_msgs/sidr_rep")
	dmesg -c > /dev/null
	cm_at sidr-req --local-id 0x1234 --service-id 0x1110000 --count 3 || return 1
	sleep 1
	_bad=0
	for f in "$cb/cm_rx_msgs/sidr_req $rq0" "$cb/cm_tx_msgs/sidr_rep $rp0" "$ca/cm_rx_msgs/sidr_rep $as0"; do
		# shellcheck disable=SC2086 # "FILE BEFORE"
		set -- $f
		[ $(($(cat "$1") - $2)) = 3 ] || { echo "$1: $(cat "$1") (was $2), want 3 more"; _bad=1; }
	done
	[ "$(dmesg | grep -c 'rdma cm')" = 0 ] || { dmesg | grep 'rdma cm'; _bad=1; }
	[ "$_bad" = 0 ]
}

teardown() {
	rmmod rdma_rxe_cm_live_test 2>/dev/null
	rmmod rdma_rxe_qp1_test 2>/dev/null
	rmmod rdma_rxe_soak_test 2>/dev/null
	rmmod rdma_rxe_resources_test 2>/dev/null
	rxe_pair_teardown hoa hob
}

tmpd=$(mktemp -d) || exit 1
cleanup_add rm -rf "$tmpd"

ktap_plan
ktap_check "setup" setup
ktap_check "idle_malformed" idle_malformed
ktap_check "under_traffic" under_traffic
ktap_check "read_limit" read_limit
ktap_check "out_of_place" out_of_place
ktap_check "reth_len" reth_len
ktap_check "qp1" qp1
ktap_check "cm_live" cm_live
ktap_check "sidr" sidr
ktap_check "teardown" teardown
ktap_finish
