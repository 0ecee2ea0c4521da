package walk

// ShareCheck is the authors' pairwise rule (docs/paper.md §3.1, Lai-JX/Scheduler switch.share_check):
// should a pending job A start now on the GPUs of a running job B, or wait until B finishes?
// etcA and etcB are the remaining times in seconds (A at its exclusive iteration time, B at its
// current, possibly slowed, iteration time); xiA and xiB are the slowdowns each suffers next to
// the other. tCon is the pair's average completion time from now if A starts sharing now, tSeq
// if A waits; A shares iff tCon < tSeq (strict). By Theorem 1 (docs/paper.md §3.3) no later sharing
// time beats both endpoints. The arithmetic follows the authors' expression order, so results
// equal theirs to the last bit.
func ShareCheck(etcA, etcB, xiA, xiB float64) (share bool, tCon, tSeq float64) {
	hatA := xiA * etcA
	hatB := xiB * etcB
	if hatA >= hatB {
		tCon = 0.5*etcA + (1-1/(2*xiA))*hatB
	} else {
		tCon = 0.5*etcB + (1-1/(2*xiB))*hatA
	}
	tSeq = etcB + 0.5*etcA
	return tCon < tSeq, tCon, tSeq
}

// PairAverage returns the pair's average completion time, measured from now, when A starts
// sharing B's GPUs after a delay tau ∈ [0, etcB] (B runs alone until then). It is the brute-force
// model behind Theorem 1 and is used by tests: ShareCheck's tCon is PairAverage(0) and its tSeq
// is PairAverage(etcB).
func PairAverage(etcA, etcB, xiA, xiB, tau float64) float64 {
	if tau >= etcB {
		return (etcB + etcB + etcA) / 2
	}
	restB := etcB - tau // B's remaining exclusive time when sharing begins
	hatA, hatB := xiA*etcA, xiB*restB
	if hatA >= hatB {
		// B finishes first, at tau + hatB; A has done hatB/xiA of its work by then.
		endB := tau + hatB
		endA := endB + etcA - hatB/xiA
		return (endA + endB) / 2
	}
	endA := tau + hatA
	endB := endA + restB - hatA/xiB
	return (endA + endB) / 2
}

// shareAt is ShareCheck for a pending job that would share at one sub-batch (remaining time
// etcShare) but would run alone at its fastest one (etcWait): t_con is computed with the former,
// t_seq with the latter, since waiting means running alone later. With one sub-batch the two are
// equal and this is exactly ShareCheck.
func shareAt(etcShare, etcWait, etcB, xiA, xiB float64) (share bool, tCon, tSeq float64) {
	_, tCon, _ = ShareCheck(etcShare, etcB, xiA, xiB)
	tSeq = etcB + 0.5*etcWait
	return tCon < tSeq, tCon, tSeq
}
