package messages

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sync"
)

// DefaultMaxPart is the default fragment size limit: 1 MiB, the default
// max_payload of a NATS server.
const DefaultMaxPart = 1 << 20

// FragmentHeaderSize is the number of bytes of every fragment that Split
// spends on its header:
//
//	"PDBF" | version uint16 | 0 uint16 | id uint64 | part index uint32 |
//	part count uint32 | payload length uint32 | CRC-32C of the whole payload uint32
//
// The two zero bytes keep a fragment's data 4-aligned where the fragment
// is: a message sent whole in one fragment is decoded in place
// (Reassembler.AddMessage), its float32 arrays the fragment's own bytes.
const FragmentHeaderSize = 32

const fragMagic = "PDBF"

// partOverhead is what a Reassembler charges per part, on top of its bytes,
// for the bookkeeping of holding it.
const partOverhead = 64

// Split cuts payload into fragments of at most maxPart bytes each, header
// included, to be put back together by a Reassembler. id names the payload
// among all those a Reassembler sees at once: a per-sender counter is
// enough if each sender has its own Reassembler or is named to it
// (AddMessageFrom); otherwise put the sender in the high bits. An empty payload gives one fragment.
//
// Split panics if maxPart is not larger than FragmentHeaderSize or payload
// is 4 GiB or longer; EncodeParts and EncodeEach report those as errors
// instead.
func Split(payload []byte, maxPart int, id uint64) [][]byte {
	if maxPart <= FragmentHeaderSize {
		panic(fmt.Sprintf("messages: Split: maxPart %d leaves no room after the %d-byte fragment header", maxPart, FragmentHeaderSize))
	}
	if uint64(len(payload)) > math.MaxUint32 {
		panic(fmt.Sprintf("messages: Split: payload of %d bytes exceeds the 4 GiB fragment limit", len(payload)))
	}
	total := uint32(len(payload))
	count := partCount(total, maxPart)
	sum := crc32.Checksum(payload, castagnoli)
	parts := make([][]byte, count)
	for i := range count {
		lo, hi, _ := partBounds(total, count, i)
		p := make([]byte, FragmentHeaderSize, FragmentHeaderSize+int(hi-lo))
		putFragmentHeader(p, fragHeader{id: id, index: i, count: count, total: total, sum: sum})
		parts[i] = append(p, payload[lo:hi]...)
	}
	return parts
}

// partCount returns how many fragments of at most maxPart bytes, which is
// more than FragmentHeaderSize, a payload of total bytes needs: at least
// one.
func partCount(total uint32, maxPart int) uint32 {
	room := uint64(maxPart - FragmentHeaderSize)
	return uint32(max(1, (uint64(total)+room-1)/room))
}

// EncodeParts encodes m and splits it into fragments of at most maxPart
// bytes; see Encode and Split. The fragments are fresh slices; a sender
// that hands them on at once does better with EncodeEach.
func EncodeParts(m Message, maxPart int, id uint64) ([][]byte, error) {
	var parts [][]byte
	err := EncodeEach(m, maxPart, id, func(part []byte) error {
		parts = append(parts, bytes.Clone(part))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return parts, nil
}

// encodeBuffers holds *[]byte buffers for EncodeEach, so that a sender of
// long windows reuses one buffer rather than allocating (and faulting in)
// megabytes per window.
var encodeBuffers sync.Pool

// EncodeEach encodes m and hands emit its fragments of at most maxPart
// bytes, in order: the same fragments as Split(Encode(m), maxPart, id),
// made with fewer passes over the bytes. m is encoded once, into a pooled
// buffer with room for a fragment header before it; the payload's checksum
// comes from the encoding's own; and each fragment is that part of the
// buffer with its header written just before it, over the tail of the part
// emitted before, so no part is copied.
//
// The slice emit gets is valid only until emit returns: emit must not keep
// it nor change it, but copy what it wants to keep (nats.Conn.Publish
// copies it into its write buffer). An error from emit stops EncodeEach,
// which returns it as is; the fragments emitted before it stay sent.
func EncodeEach(m Message, maxPart int, id uint64, emit func(part []byte) error) error {
	if maxPart <= FragmentHeaderSize {
		return fmt.Errorf("encode parts: maxPart %d, want more than %d: %w", maxPart, FragmentHeaderSize, ErrInvalid)
	}
	if err := checkEncode(m); err != nil {
		return err
	}
	bp, _ := encodeBuffers.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if need := FragmentHeaderSize + encodedSizeHint(m); cap(*bp) < need {
		*bp = make([]byte, 0, need)
	}
	b, err := encode((*bp)[:FragmentHeaderSize], m)
	if b != nil {
		*bp = b[:0] // keep the larger buffer if encode had to grow it
	}
	defer encodeBuffers.Put(bp)
	if err != nil {
		return err
	}
	payload := b[FragmentHeaderSize:]
	if uint64(len(payload)) > math.MaxUint32 {
		return fmt.Errorf("encode parts: %v of %d bytes: %w", m.Kind(), len(payload), ErrTooLarge)
	}
	total := uint32(len(payload))
	count := partCount(total, maxPart)
	sum := payloadChecksum(payload)
	for i := range count {
		lo, hi, _ := partBounds(total, count, i)
		// Part i is payload[lo:hi], at b[FragmentHeaderSize+lo:]; its header
		// goes in the FragmentHeaderSize bytes before it, which hold parts
		// already emitted (or, for the first, the room left for it).
		frag := b[lo : FragmentHeaderSize+hi : FragmentHeaderSize+hi]
		putFragmentHeader(frag, fragHeader{id: id, index: i, count: count, total: total, sum: sum})
		if err := emit(frag); err != nil {
			return err
		}
	}
	return nil
}

// fragHeader is a parsed fragment header.
type fragHeader struct {
	id                       uint64
	index, count, total, sum uint32
}

// slot names an incomplete message: its sender's id for it.
type slot struct {
	from string
	id   uint64
}

// fragKey identifies a payload: the same id with another layout or checksum
// is another payload, such as one from a restarted sender.
type fragKey struct {
	slot
	count, total, sum uint32
}

func (h fragHeader) key(from string) fragKey {
	return fragKey{slot: slot{from, h.id}, count: h.count, total: h.total, sum: h.sum}
}

func putFragmentHeader(p []byte, h fragHeader) {
	copy(p, fragMagic)
	binary.LittleEndian.PutUint16(p[4:], Version)
	binary.LittleEndian.PutUint16(p[6:], 0)
	binary.LittleEndian.PutUint64(p[8:], h.id)
	binary.LittleEndian.PutUint32(p[16:], h.index)
	binary.LittleEndian.PutUint32(p[20:], h.count)
	binary.LittleEndian.PutUint32(p[24:], h.total)
	binary.LittleEndian.PutUint32(p[28:], h.sum)
}

// parseFragment checks a fragment in itself and returns its header and
// data.
func parseFragment(frag []byte) (fragHeader, []byte, error) {
	var h fragHeader
	if len(frag) >= len(fragMagic) && string(frag[:len(fragMagic)]) != fragMagic {
		return h, nil, fmt.Errorf("fragment: magic %q, want %q: %w", frag[:len(fragMagic)], fragMagic, ErrMagic)
	}
	if len(frag) < FragmentHeaderSize {
		return h, nil, fmt.Errorf("fragment: %d bytes, shorter than its header: %w", len(frag), ErrTruncated)
	}
	if v := binary.LittleEndian.Uint16(frag[4:]); v != Version {
		return h, nil, fmt.Errorf("fragment: version %d, want %d: %w", v, Version, ErrVersion)
	}
	h.id = binary.LittleEndian.Uint64(frag[8:])
	h.index = binary.LittleEndian.Uint32(frag[16:])
	h.count = binary.LittleEndian.Uint32(frag[20:])
	h.total = binary.LittleEndian.Uint32(frag[24:])
	h.sum = binary.LittleEndian.Uint32(frag[28:])
	if pad := binary.LittleEndian.Uint16(frag[6:]); pad != 0 {
		return h, nil, fmt.Errorf("fragment %d: header bytes 6-7 hold %#04x, want 0: %w", h.id, pad, ErrFragment)
	}
	data := frag[FragmentHeaderSize:]
	lo, hi, ok := partBounds(h.total, h.count, h.index)
	if !ok {
		return h, nil, fmt.Errorf("fragment %d: part %d of %d of a %d-byte payload: %w", h.id, h.index, h.count, h.total, ErrFragment)
	}
	if uint64(len(data)) != hi-lo {
		return h, nil, fmt.Errorf("fragment %d: part %d of %d holds %d bytes, want %d: %w", h.id, h.index, h.count, len(data), hi-lo, ErrFragment)
	}
	return h, data, nil
}

// partBounds returns the byte range [lo, hi) of part index when a payload
// of total bytes is cut into count parts, and whether that is a layout Split
// produces: parts of ceil(total/count) bytes, the last one possibly
// shorter, none empty unless the payload is.
func partBounds(total, count, index uint32) (lo, hi uint64, ok bool) {
	if count == 0 || index >= count {
		return 0, 0, false
	}
	if total == 0 {
		return 0, 0, count == 1
	}
	size := (uint64(total) + uint64(count) - 1) / uint64(count)
	if (uint64(count)-1)*size >= uint64(total) {
		return 0, 0, false
	}
	lo = uint64(index) * size
	return lo, min(lo+size, uint64(total)), true
}

// ReassemblerConfig bounds the memory of a Reassembler. Zero or negative
// fields take their defaults.
type ReassemblerConfig struct {
	// MaxMessages is the most incomplete messages held at once; a new one
	// beyond it evicts the oldest. Default 16.
	MaxMessages int
	// MaxBytes is the most memory held for incomplete messages. A message
	// is charged its full length, plus 64 bytes per part, from its first
	// fragment on; one that does not fit evicts the oldest. Default 512 MiB:
	// two of the longest messages.
	MaxBytes int64
	// MaxSenderBytes is the most memory held for one sender's incomplete
	// messages (see AddMessageFrom), charged as for MaxBytes; one that does
	// not fit evicts that sender's oldest, so that a sender flooding
	// partial messages pushes out its own and not the others'. Default
	// MaxBytes.
	MaxSenderBytes int64
	// MaxTotal is the longest payload accepted, checked before anything is
	// allocated for it (see Limits). Default DefaultMaxMessage.
	MaxTotal int
	// Recent is how many finished (completed or evicted) messages are
	// remembered so that their late or duplicated fragments are dropped
	// instead of starting them anew. Default 1024.
	Recent int
}

// DefaultMaxMessage is the longest message a Reassembler with default
// limits (every NATS endpoint's) accepts: 256 MiB, a window of K = 200
// mini-batches of 256 rows of 784 values (the K study's largest) and more.
// A longer one is rejected as too large.
const DefaultMaxMessage = 256 << 20

// DefaultMaxPending is the memory a Reassembler with default limits holds
// for incomplete messages (ReassemblerConfig.MaxBytes): two of the longest.
// Messages arriving at once from several senders beyond it evict each
// other, and none of them arrives.
const DefaultMaxPending = 2 * DefaultMaxMessage

// PendingBytes is what a Reassembler charges against MaxBytes for a
// message of total bytes in fragments of at most maxPart bytes: its bytes
// and the bookkeeping of each part, saturating at math.MaxInt64.
func PendingBytes(total int64, maxPart int) int64 {
	room := int64(max(maxPart-FragmentHeaderSize, 1))
	parts := max(0, total)/room + 1
	if parts > math.MaxInt64/partOverhead || total > math.MaxInt64-parts*partOverhead {
		return math.MaxInt64
	}
	return total + parts*partOverhead
}

func (c ReassemblerConfig) withDefaults() ReassemblerConfig {
	if c.MaxMessages <= 0 {
		c.MaxMessages = 16
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxPending
	}
	if c.MaxSenderBytes <= 0 || c.MaxSenderBytes > c.MaxBytes {
		c.MaxSenderBytes = c.MaxBytes
	}
	if c.MaxTotal <= 0 {
		c.MaxTotal = DefaultMaxMessage
	}
	if c.Recent <= 0 {
		c.Recent = 1024
	}
	return c
}

// ReassemblerStats counts what a Reassembler has done.
type ReassemblerStats struct {
	// Completed counts payloads returned whole.
	Completed uint64
	// Duplicates counts fragments dropped because their part was already
	// held or their message already completed.
	Duplicates uint64
	// Stale counts fragments dropped because their message was evicted.
	Stale uint64
	// Rejected counts fragments refused with an error other than
	// ErrEvicted, including those completing a payload whose checksum
	// failed.
	Rejected uint64
	// Evicted counts incomplete messages dropped to stay within the limits.
	Evicted uint64
	// InFlight is the number of incomplete messages held now.
	InFlight int
	// Reserved is the memory charged to them now, in bytes, and Peak the
	// most charged at once so far.
	Reserved, Peak int64
}

// Add adds o to s, field by field: the stats of several reassemblers
// summed, whose Peak, the sum of theirs, bounds what they held at once.
func (s *ReassemblerStats) Add(o ReassemblerStats) {
	s.Completed += o.Completed
	s.Duplicates += o.Duplicates
	s.Stale += o.Stale
	s.Rejected += o.Rejected
	s.Evicted += o.Evicted
	s.InFlight += o.InFlight
	s.Reserved += o.Reserved
	s.Peak += o.Peak
}

// Reassembler puts fragments made by Split back together. Fragments of
// several messages may arrive interleaved, in any order and more than once.
// Its memory is bounded by its ReassemblerConfig. It is safe for concurrent
// use; the zero value is ready to use with the default limits.
type Reassembler struct {
	mu       sync.Mutex
	cfg      ReassemblerConfig
	ready    bool
	partial  map[slot]*partial
	order    []slot // the keys of partial, oldest first
	reserved int64
	peak     int64
	// senders holds the memory charged to each sender's incomplete
	// messages; a sender with none has no entry.
	senders map[string]int64
	// recent remembers finished messages in a ring: true for completed,
	// false for evicted.
	recent     map[fragKey]bool
	recentRing []fragKey
	recentNext int
	stats      ReassemblerStats
}

// partial is a message whose parts have not all arrived. Its payload is
// allocated whole at its first fragment, which is charged for it anyway,
// and each part is copied straight to its place, so that completing it
// takes no join.
type partial struct {
	key     fragKey
	payload []byte   // key.total bytes, the parts that arrived in place
	have    []uint64 // bit i: part i arrived
	got     int      // parts that arrived
	need    int64    // bytes charged to MaxBytes
}

// arrived reports whether part index is already held.
func (p *partial) arrived(index uint32) bool {
	return p.have[index/64]&(1<<(index%64)) != 0
}

// put copies part index, data, to its place.
func (p *partial) put(index uint32, data []byte) {
	lo, _, _ := partBounds(p.key.total, p.key.count, index)
	copy(p.payload[lo:], data)
	p.have[index/64] |= 1 << (index % 64)
	p.got++
}

// NewReassembler returns a Reassembler with the given limits.
func NewReassembler(cfg ReassemblerConfig) *Reassembler {
	r := &Reassembler{cfg: cfg}
	r.setup()
	return r
}

func (r *Reassembler) setup() {
	if r.ready {
		return
	}
	r.cfg = r.cfg.withDefaults()
	r.partial = make(map[slot]*partial)
	r.senders = make(map[string]int64)
	r.recent = make(map[fragKey]bool)
	r.ready = true
}

// Add takes one fragment. It returns the whole payload, a fresh slice, when
// frag completes it, and nil otherwise. Errors wrap ErrTruncated, ErrMagic,
// ErrVersion or ErrFragment for a malformed fragment or one that disagrees
// with earlier fragments of its id, ErrTooLarge for a payload over the
// limits, and ErrChecksum when the completed payload is corrupt (it is then
// dropped). An error wrapping ErrEvicted says that other, incomplete
// messages were dropped to make room: frag itself was kept. Duplicates are
// dropped silently and counted in Stats.
func (r *Reassembler) Add(frag []byte) ([]byte, error) {
	payload, _, err := r.take("", frag, false)
	return payload, err
}

// AddMessage takes one fragment, as Add, and decodes the payload it
// completes, as DecodeOwned does: it returns the message and the
// payload's length, or nil, 0 and Add's error (nil, nil for a fragment
// that completes nothing). A payload is checksummed once, for both the
// fragments' checksum and the message's own, and its float32 arrays are
// the payload's memory: a window in parts comes in with one copy, its
// parts' into place, and a message in one fragment with none, decoded in
// place. AddMessage takes frag over: the caller must not change it
// afterwards (a NATS subscription hands each message a fresh slice).
// Errors are Add's and Decode's.
func (r *Reassembler) AddMessage(frag []byte) (Message, int, error) {
	return r.AddMessageFrom("", frag)
}

// AddMessageFrom is AddMessage for a fragment from sender from, where one
// Reassembler takes the fragments of several senders: each sender's ids
// are its own, and its incomplete messages are held within
// MaxSenderBytes.
func (r *Reassembler) AddMessageFrom(from string, frag []byte) (Message, int, error) {
	payload, summed, err := r.take(from, frag, true)
	if payload == nil {
		return nil, 0, err
	}
	m, err := decode(payload, true, summed)
	return m, len(payload), err
}

// take is Add, saying too whether the payload's trailer is the checksum
// of the rest (messageSum). With owned, a payload in one fragment is
// frag's own bytes, not a copy.
func (r *Reassembler) take(from string, frag []byte, owned bool) ([]byte, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setup()
	payload, summed, err := r.add(from, frag, owned)
	if err != nil && !errors.Is(err, ErrEvicted) {
		r.stats.Rejected++
	}
	return payload, summed, err
}

func (r *Reassembler) add(from string, frag []byte, owned bool) ([]byte, bool, error) {
	h, data, err := parseFragment(frag)
	if err != nil {
		return nil, false, err
	}
	// A header's claim is checked against the limits before anything is
	// allocated for it.
	if uint64(h.total) > uint64(r.cfg.MaxTotal) {
		return nil, false, fmt.Errorf("fragment %d: payload of %d bytes, limit %d: %w", h.id, h.total, r.cfg.MaxTotal, ErrTooLarge)
	}
	need := int64(h.total) + int64(h.count)*partOverhead
	if need > r.cfg.MaxSenderBytes {
		return nil, false, fmt.Errorf("fragment %d: payload of %d bytes in %d parts needs %d bytes, limit %d: %w", h.id, h.total, h.count, need, r.cfg.MaxSenderBytes, ErrTooLarge)
	}
	key := h.key(from)
	if completed, ok := r.recent[key]; ok {
		if completed {
			r.stats.Duplicates++
		} else {
			r.stats.Stale++
		}
		return nil, false, nil
	}
	if h.count == 1 {
		if owned {
			return r.finish(key, data)
		}
		// A fresh slice: the caller may reuse frag.
		return r.finish(key, append(make([]byte, 0, len(data)), data...))
	}

	var evicted error
	p := r.partial[key.slot]
	if p == nil {
		evicted = r.makeRoom(from, need)
		p = &partial{
			key:     key,
			payload: make([]byte, h.total),
			have:    make([]uint64, (h.count+63)/64),
			need:    need,
		}
		r.partial[key.slot] = p
		r.order = append(r.order, key.slot)
		r.reserved += need
		r.senders[from] += need
		r.peak = max(r.peak, r.reserved)
	} else if p.key != key {
		return nil, false, fmt.Errorf("fragment %d: %d parts, %d bytes, crc32c %08x; earlier fragments say %d, %d, %08x: %w",
			h.id, h.count, h.total, h.sum, p.key.count, p.key.total, p.key.sum, ErrFragment)
	}
	if p.arrived(h.index) {
		r.stats.Duplicates++
		return nil, false, nil
	}
	// parseFragment checked that data is exactly part h.index of the
	// layout, which is p's since the keys are equal.
	p.put(h.index, data)
	if p.got < int(h.count) {
		return nil, false, evicted
	}
	r.drop(key.slot)
	return r.finish(key, p.payload)
}

// finish checks the checksum of a whole payload, which is the caller's to
// hand out, and says whether its trailer checks too (messageSum).
func (r *Reassembler) finish(key fragKey, payload []byte) ([]byte, bool, error) {
	// A corrupt message is remembered too, so its retransmitted duplicates
	// do not start it again.
	r.remember(key, true)
	got, trailerOK := messageSum(payload)
	if got != key.sum {
		return nil, false, fmt.Errorf("fragment %d: payload crc32c %08x, want %08x: %w", key.id, got, key.sum, ErrChecksum)
	}
	r.stats.Completed++
	return payload, trailerOK, nil
}

// makeRoom evicts incomplete messages until one more of sender from,
// charged need bytes, fits the limits: from's own oldest while from is
// over MaxSenderBytes, then the oldest of all.
func (r *Reassembler) makeRoom(from string, need int64) error {
	var n int
	var oldest *partial
	evict := func(p *partial) {
		if oldest == nil {
			oldest = p
		}
		r.drop(p.key.slot)
		r.remember(p.key, false)
		r.stats.Evicted++
		n++
	}
	for r.senders[from]+need > r.cfg.MaxSenderBytes {
		i := slices.IndexFunc(r.order, func(s slot) bool { return s.from == from })
		evict(r.partial[r.order[i]])
	}
	for len(r.order) > 0 && (len(r.partial) >= r.cfg.MaxMessages || r.reserved+need > r.cfg.MaxBytes) {
		evict(r.partial[r.order[0]])
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("reassemble: evicted %d incomplete message(s), the oldest %d with %d of %d parts: %w",
		n, oldest.key.id, oldest.got, oldest.key.count, ErrEvicted)
}

// drop forgets the incomplete message at s.
func (r *Reassembler) drop(s slot) {
	p := r.partial[s]
	delete(r.partial, s)
	r.order = slices.DeleteFunc(r.order, func(x slot) bool { return x == s })
	r.reserved -= p.need
	if r.senders[s.from] -= p.need; r.senders[s.from] <= 0 {
		delete(r.senders, s.from)
	}
}

// remember records a finished message in the ring of recent ones.
func (r *Reassembler) remember(key fragKey, completed bool) {
	if _, ok := r.recent[key]; ok {
		r.recent[key] = completed
		return
	}
	if len(r.recentRing) < r.cfg.Recent {
		r.recentRing = append(r.recentRing, key)
	} else {
		delete(r.recent, r.recentRing[r.recentNext])
		r.recentRing[r.recentNext] = key
		r.recentNext = (r.recentNext + 1) % len(r.recentRing)
	}
	r.recent[key] = completed
}

// Stats returns what r has done so far.
func (r *Reassembler) Stats() ReassemblerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setup()
	s := r.stats
	s.InFlight = len(r.partial)
	s.Reserved, s.Peak = r.reserved, r.peak
	return s
}

// SetLimits changes r's limits, as a receiver does when it learns what its
// senders may send (a slave its RBM from its Assign). Incomplete messages
// over new, lower limits are kept until they complete or are evicted.
func (r *Reassembler) SetLimits(cfg ReassemblerConfig) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setup()
	r.cfg = cfg.withDefaults()
}
