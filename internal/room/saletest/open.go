package saletest

// knownOpen are the invariants today's engine is known to break, with the issue's
// item that fixes each: a seed that breaks one logs it and goes on checking the
// others, so the sale stays green while the fix is on its way. Delete an entry with
// its fix; -sale.strict (or SALE_STRICT=1) fails on these too.
var knownOpen = map[invariant]string{
	// A waiting socket reopened with the admitted cookie it was told of its turn
	// with is taken as the arrival (the store's Touch), so the place keeps its slot.
	socketIsNoArrival: "issue 40 item 1",
	// A no-show is queued again first and keeps coming back first, turn after turn.
	noShowsLetTheHeadIn: "issue 40 item 1",
}
