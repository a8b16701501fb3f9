package redisstore

// A failover can lose the last writes. Replication is asynchronous: a master answers
// a script before its replica has the script's writes, so when the master dies the
// promoted replica holds a consistent but older room (a script's writes replicate
// together, so it is some prefix of what the master did). Every invariant a script
// keeps holds on that prefix (capacity, positions, nobody both admitted and queued);
// what is lost is what the visitors were told by the lost writes: places, admissions,
// leaves (docs/several-instances.md, "A failover without WAIT").
//
// One loss would be worse than forgetting: the ticket counter. The promoted replica's
// counter is below the tickets the old master last handed out, so the next joins
// would be given those numbers again, and a ticket is what an instance holding a
// waiter's socket asks Positions about. The waiter whose ticket was lost would be told
// the newcomer's place, until the newcomer was admitted, and only then join again, at
// the back, behind everyone who came meanwhile. So a join first checks whether the
// node it runs on is still the one that issued the room's last tickets: the node's
// replication id (master_replid, which a promoted replica, or a restarted server,
// takes anew) is kept in meta. When it differs, the counter skips TICKET_SKIP (2^16)
// tickets before going on, so no lost ticket is handed out again as long as the lost
// joins number fewer than 65,536, and every lost ticket is then below every new one,
// in a stretch of the bitmaps that no waiter holds (Positions answers 0 for it; the
// waiter's instance asks Status, which does not know the id, and the visitor joins
// again).
//
// A room with no counter at all is new, or was lost with everything else (a Redis
// restarted empty): its counter starts from the node's clock, TICKETS_PER_MS (64) a
// millisecond, so it starts above every ticket an earlier life of the room handed out
// as long as that life took fewer than 64 joins a millisecond on average (each skip
// counts as 65,536). Tickets stay below 2^53, exact in Lua's numbers, until the year
// 6000.
//
// INFO costs Redis about ten times a plain command, so the check runs at most every
// NODE_CHECK_EVERY (100 ms, by the node's own TIME, kept in meta with the id): a
// failover takes longer than that (Cluster's node timeout, Sentinel's down-after), so
// the first join on the promoted replica always finds the check due. A promoted
// replica whose clock is behind the old master's by nearly the whole failover time
// could skip the check for up to those 100 ms; a clock that is behind by more makes it
// due at once.
//
// INFO is in the @dangerous ACL category. A user denied it still joins: the check
// then sees no node (it is called with pcall) and never skips, and
// docs/several-instances.md says the store's user needs INFO for it.
//
// The skip costs the room, for as long as the waiters from before the failover are
// queued, a stretch of TICKET_SKIP/8 bytes of each bitmap (8 KiB), 4 bytes a ticket of
// heard times (256 KiB) and 2 of holders (128 KiB); when the queue is empty it costs
// nothing, since the next busy period starts its bitmaps at the next ticket.
//
// The pass lane (pass.go) numbers its holders from the start of the busy period, so a
// promoted replica's lane counter is behind too, and lost lane tickets lie inside the
// lane, where no skip can pass them. A skip therefore closes the lane until the queue
// next empties: pass holders arriving meanwhile join at the back of the line, still
// counted against their uses, which is the price of never handing a lost ticket out
// again.
//
// The check is ticket_guard in lua/prelude.lua; join.lua and pass_join.lua call it
// before they issue a ticket.
