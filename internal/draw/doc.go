// Package draw is the published rule of a room's draws, with no Caddy and no store in
// it: what a room commits to before entries open, what it publishes when they close,
// how the order follows from the seed and the entries alone, the receipts a visitor
// keeps, and the check anyone can make of a receipt against the room's public page.
// docs/fairness.md is the same rule for users, with a verifier in JavaScript that the
// tests here run against receipts this package signs.
//
// The rule, once:
//
//   - the seed is 32 random bytes, published as 64 lowercase hex digits once drawn;
//     the commitment, published before anyone can enter, is "sha256:" and the hex of
//     SHA-256 of the seed's 32 bytes;
//   - an entry id is 16 random bytes as 32 lowercase hex digits, minted by the room
//     for each entrant, apart from the visitor id: it grants nothing, so the list of
//     them is public;
//   - the entries list is every entry id of the draw, sorted ascending (byte order,
//     which for lowercase hex is also every locale's), each followed by "\n", the
//     last one too; entries_hash is "sha256:" and the hex of SHA-256 of exactly those
//     bytes;
//   - the drawn order is the entries sorted ascending by HMAC-SHA256 with the seed's
//     32 bytes as the key and the entry id's 32 characters as the message, compared
//     as bytes; two equal MACs (a chance of 2^-256 per pair) go by entry id, ascending.
//     Place 1 is first.
//
// A receipt is signed with Ed25519 over its canonical JSON without "signature": the
// JSON Canonicalization Scheme (RFC 8785), which for a receipt (strings and whole
// numbers below 2^53) is JavaScript's JSON.stringify of the object with its keys
// sorted. See Receipt and Signer.
//
// Parsing is for hostile input: a receipt or page over its size bound is refused
// before it is read, and a duplicate key, an unknown receipt field, a number that is
// not a plain whole number, invalid UTF-8 or trailing data are each refused with an
// error that says which. Nothing here panics on any input (FuzzVerify).
package draw
