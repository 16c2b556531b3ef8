// Package messages defines everything the master and the slaves of a
// pipelined DBN pre-training run say to each other, and its versioned binary
// encoding.
//
// A slave joins with Register and the master answers with an Admission:
// Admitted (in the run, or a spare), Full, or Refused with a reason. The
// master sends Assign to give RBM_i to slave i. Every K mini-batches slave i
// sends a Chunk, the paper's "middle result" of those K mini-batches together
// with its hidden biases B_i, to slave i+1, which sets the biases of its
// L_i-copy to B_i and trains on the rows; Credit flows back to bound how far
// the producer may run ahead, and EndOfStream follows the last window. Slaves
// report to the master with Status (progress, and what their input link
// rejected, counted by RejectReason in Rejections), Weights (the trained
// RBM_i), Error (a failure, or a stop on request when Stopped is set) and
// Checkpoint (RBM_i's state, for a replacement slave), which the master
// answers with CheckpointAck; Stop comes from the master. Every message of a
// run carries its RunID and Incarnation, the latter telling a resumed
// master's messages from those of its earlier incarnations.
//
// Encode frames one Message as
//
//	"PDBN" | version uint16 | kind uint8 | body length uint32 | body | CRC-32C uint32
//
// with every number little-endian, strings and slices length-prefixed and
// float arrays stored as raw IEEE-754 bits; a float32 array starts a
// multiple of 4 bytes into the message (0 to 3 zero bytes after its length
// prefix), so that DecodeOwned can hand out the bytes of a payload it owns
// as the array, no copy. A chunk's values may travel narrower
// (Chunk.Encoding: binary16, 8-bit fractions of [0, 1], bits), and read
// back as float32. Each kind lists its body's fields
// once, and that one list both writes and reads them. Decode checks every
// part of that frame and the message's own consistency (shapes, enum values)
// and reports what is wrong with a wrapped sentinel error such as ErrChecksum
// or ErrShape; it never panics and never allocates from a length it has not
// checked against the bytes present (a narrow encoding's values, at most
// 32 float32 bytes for each byte present, no more than DefaultMaxMessage). Kind numbers are never reused: those of
// the kinds retired in version 3 (end-of-epoch, 4, and heartbeat, 10) fail
// with ErrKind.
//
// A chunk is larger than a NATS message may be (1 MB by default), so Split
// and EncodeParts cut an encoded message into fragments of at most maxPart
// bytes, and a Reassembler, with bounded memory, puts them back together;
// its AddMessage decodes what it completes, checksumming it once.
//
// The package uses only the standard library and the module's leaf helpers
// (internal/sat, internal/narrow, whose rounding the stages share) and
// knows nothing of NATS: any transport that moves byte slices carries
// these messages.
package messages
