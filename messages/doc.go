// Package messages defines everything the master and the slaves of a
// pipelined DBN pre-training run say to each other, and its versioned binary
// encoding.
//
// The master sends Assign to give RBM_i to slave i. Every K mini-batches
// slave i sends a Chunk, the paper's "middle result" of those K mini-batches
// together with its hidden biases B_i, to slave i+1, which sets the biases of
// its L_i-copy to B_i and trains on the rows; Credit flows back to bound how
// far the producer may run ahead. EndOfEpoch and EndOfStream close the
// windows of an epoch and of the run. Status, Heartbeat, Weights and Error go
// to the master, Stop comes from it.
//
// Encode frames one Message as
//
//	"PDBN" | version uint16 | kind uint8 | body length uint32 | body | CRC-32C uint32
//
// with every number little-endian, strings and slices length-prefixed and
// float arrays stored as raw IEEE-754 bits. Decode checks every part of that
// frame and the message's own consistency (shapes, enum values) and reports
// what is wrong with a wrapped sentinel error such as ErrChecksum or ErrShape;
// it never panics and never allocates from a length it has not checked
// against the bytes present.
//
// A chunk is larger than a NATS message may be (1 MB by default), so Split
// and EncodeParts cut an encoded message into fragments of at most maxPart
// bytes, and a Reassembler, with bounded memory, puts them back together.
//
// The package uses only the standard library and knows nothing of NATS: any
// transport that moves byte slices carries these messages.
package messages
