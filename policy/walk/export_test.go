package walk

// WithMovedCap bounds the log of changed GPUs at n entries (greedy.note), for a test of its
// compaction.
func WithMovedCap(n int) Option { return func(o *options) { o.movedCap = n } }

// WithLazyChecks makes every change of the lazy victims check their sets of nodes against the
// cluster, and panic if one is off.
func WithLazyChecks() Option { return func(o *options) { o.checkLazy = true } }

// MaxMoved is maxMoved, the entries the log of changed GPUs keeps when it drops the rest.
const MaxMoved = maxMoved
