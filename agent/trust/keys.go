package trust

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"aead.dev/minisign"
	"golang.org/x/crypto/blake2b"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxKeyFileBytes bounds a publisher file or a key-set document: a key is a 56-byte
// line, so 64 KiB holds far more keys than any publisher has.
const maxKeyFileBytes = 64 << 10

// Publisher is one publisher the operator trusts: its current key set (after every
// key-set update it signed, see Keys.Advance), the keys it revoked, and the plugins
// it may sign.
type Publisher struct {
	// Name is the publisher file's name without .pub, e.g. "acme".
	Name string
	// Keys is the current key set.
	Keys []minisign.PublicKey
	// Serial is the key set's serial: 0 for the configured one (unless the file
	// says otherwise), then each accepted update's.
	Serial uint64
	// Revoked are key ids whose signatures are worth nothing, even on a binary the
	// catalog already holds.
	Revoked map[uint64]bool
	// Plugins are the plugin names the publisher may sign: exact names, NAME_* style
	// prefixes, or "*" for any; nil means any.
	Plugins []string
	// Agent says the publisher may sign the agent's own releases (`agent: yes`): a
	// release runs as root on every machine and replaces the agent itself, so no
	// publisher may sign one unless its file says so.
	Agent bool
	// source is the file the configured key set came from.
	source string
}

// May reports whether the publisher may sign the plugin called name.
func (p *Publisher) May(name string) bool {
	if p.Plugins == nil {
		return true
	}
	for _, pat := range p.Plugins {
		if pat == "*" || pat == name || (strings.HasSuffix(pat, "*") && strings.HasPrefix(name, strings.TrimSuffix(pat, "*"))) {
			return true
		}
	}
	return false
}

// key returns the current key with id, if the set has it.
func (p *Publisher) key(id uint64) (minisign.PublicKey, bool) {
	for _, k := range p.Keys {
		if k.ID() == id {
			return k, true
		}
	}
	return minisign.PublicKey{}, false
}

// Keys is every publisher the operator configured, each at its current key set.
type Keys struct {
	// mu guards the key sets: a running agent advances them (a key-set update from
	// the fleet) while it checks catalog entries against them.
	mu sync.RWMutex
	// Dir is the publishers directory the configured keys came from.
	Dir string
	// stateDir keeps the accepted key-set updates (in the data dir); "" keeps none.
	stateDir   string
	Publishers map[string]*Publisher
	// Warnings are what loading ignored: a key-set update that no longer verifies,
	// a file that is not a publisher.
	Warnings []string
}

// Configured reports whether any publisher that may sign plugins is configured: then
// every plugin must be signed by one (docs/agent.md "Plugin catalog and signatures").
// A publisher of agent releases only (`plugins:` with no name, `agent: yes`) does not
// count: trusting a vendor's agent releases says nothing about third-party plugins.
func (k *Keys) Configured() bool {
	if k == nil {
		return false
	}
	for _, p := range k.Publishers {
		if p.Plugins == nil || len(p.Plugins) > 0 {
			return true
		}
	}
	return false
}

// AgentReleases reports whether any publisher may sign agent releases (`agent: yes`):
// without one the agent takes no update.
func (k *Keys) AgentReleases() bool {
	if k == nil {
		return false
	}
	for _, p := range k.Publishers {
		if p.Agent {
			return true
		}
	}
	return false
}

// KeyID writes a minisign key id as minisign does: 16 upper-case hex digits.
func KeyID(id uint64) string { return fmt.Sprintf("%016X", id) }

// LoadKeys reads the publishers of dir: every `<name>.pub` file is one publisher
// (name by the plugin-name rule), holding one or more minisign public keys (the
// two-line files minisign writes, concatenated, or bare base64 key lines) and optional
// lines `plugins: NAME ...`, `revoked: KEYID ...` and `serial: N`. A missing dir is no
// publisher. stateDir holds the key-set updates accepted earlier (Advance); they are
// applied again, in serial order, and one that no longer verifies against the
// configured keys is ignored with a warning. The files must be trusted as the catalog
// is: regular, owned by root or the agent's user, writable by nobody else.
func LoadKeys(dir, stateDir string) (*Keys, error) {
	k := &Keys{Dir: dir, stateDir: stateDir, Publishers: map[string]*Publisher{}}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || dir == "" {
		return k, nil
	}
	if err != nil {
		return nil, fmt.Errorf("publisher keys: %w", err)
	}
	if err := safefile.TrustedDir(dir); err != nil {
		return nil, fmt.Errorf("publisher keys: %w", err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pub")
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !sdk.ValidName(name) {
			return nil, fmt.Errorf("publisher file %s: a publisher's name is 1-64 letters, digits or underscores", path)
		}
		data, err := readTrusted(path, maxKeyFileBytes)
		if err != nil {
			return nil, fmt.Errorf("publisher file %w", err)
		}
		p, err := parsePublisher(name, data)
		if err != nil {
			return nil, fmt.Errorf("publisher file %s: %w", path, err)
		}
		p.source = path
		k.Publishers[name] = p
	}
	for _, p := range k.Publishers {
		k.replay(p)
	}
	return k, nil
}

// readTrusted reads a small file that decides trust: no link, no FIFO, bounded,
// owned by root or the agent's user and writable by nobody else.
func readTrusted(path string, limit int64) ([]byte, error) {
	return safefile.ReadTrusted(path, limit)
}

// parsePublisher reads a publisher file.
func parsePublisher(name string, data []byte) (*Publisher, error) {
	p := &Publisher{Name: name, Revoked: map[uint64]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "untrusted comment:"):
		case strings.HasPrefix(line, "plugins:"):
			for _, pat := range strings.Fields(strings.TrimPrefix(line, "plugins:")) {
				if pat != "*" && !sdk.ValidName(strings.TrimSuffix(pat, "*")) {
					return nil, fmt.Errorf("line %d: %q is not a plugin name, NAME* or *", n, pat)
				}
				p.Plugins = append(p.Plugins, pat)
			}
			if p.Plugins == nil {
				p.Plugins = []string{} // an empty list: the publisher may sign nothing
			}
		case strings.HasPrefix(line, "agent:"):
			switch v := strings.TrimSpace(strings.TrimPrefix(line, "agent:")); v {
			case "yes":
				p.Agent = true
			case "no":
				p.Agent = false
			default:
				return nil, fmt.Errorf("line %d: agent: %q: want yes or no", n, v)
			}
		case strings.HasPrefix(line, "revoked:"):
			for _, id := range strings.Fields(strings.TrimPrefix(line, "revoked:")) {
				v, err := strconv.ParseUint(id, 16, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: revoked key id %q is not 16 hex digits", n, id)
				}
				p.Revoked[v] = true
			}
		case strings.HasPrefix(line, "serial:"):
			v, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "serial:")), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: serial is not a whole number", n)
			}
			p.Serial = v
		default:
			key, err := parseKey(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if !slices.ContainsFunc(p.Keys, func(o minisign.PublicKey) bool { return o.ID() == key.ID() }) {
				p.Keys = append(p.Keys, key)
			}
		}
	}
	if len(p.Keys) == 0 {
		return nil, errors.New("no public key")
	}
	return p, nil
}

// parseKey reads a base64 minisign public key line.
func parseKey(line string) (minisign.PublicKey, error) {
	var key minisign.PublicKey
	if err := key.UnmarshalText([]byte(line)); err != nil {
		return key, fmt.Errorf("not a minisign public key: %v", err)
	}
	return key, nil
}

// keyBytes returns the Ed25519 key inside a minisign public key: its base64 form
// (String) holds the algorithm (2 bytes), the key id (8) and the key (32).
func keyBytes(k minisign.PublicKey) ed25519.PublicKey {
	raw, err := base64.StdEncoding.DecodeString(k.String())
	if err != nil || len(raw) != 2+8+ed25519.PublicKeySize {
		return nil
	}
	return ed25519.PublicKey(raw[10:])
}

// Signed is who vouched for a binary: the publisher and the keys of it whose
// signatures verified.
type Signed struct {
	Publisher string
	KeyIDs    []string
}

// VerifyError says why no signature of a binary could be trusted, naming each.
type VerifyError struct{ Problems []string }

func (e *VerifyError) Error() string { return strings.Join(e.Problems, "; ") }

// Verify checks a plugin binary's detached signature: sig is minisign's signature
// text, one signature or several concatenated (a release signed with the old and the
// new key during a rotation). It succeeds when at least one signature verifies with a
// current, unrevoked key of a publisher that may sign the plugin called name; every
// verifying key of that publisher is reported. Both minisign algorithms are taken
// (prehashed, minisign's default, and legacy).
func (k *Keys) Verify(name string, binary []byte, sig []byte) (Signed, error) {
	return k.verify(binary, sig, func(p *Publisher) string {
		if !p.May(name) {
			return fmt.Sprintf("which may not sign plugin %s (plugins: %s)", name, strings.Join(p.Plugins, " "))
		}
		return ""
	})
}

// VerifyAgent checks the signature of an agent release (a bundle's manifest) as Verify
// does a plugin's, with the keys of publishers whose file says `agent: yes`.
func (k *Keys) VerifyAgent(manifest []byte, sig []byte) (Signed, error) {
	return k.verify(manifest, sig, func(p *Publisher) string {
		if !p.Agent {
			return "which may not sign agent releases (its file has no `agent: yes`)"
		}
		return ""
	})
}

// verify checks sig over msg; refuse says why a publisher may not vouch for it ("":
// it may).
func (k *Keys) verify(msg []byte, sig []byte, refuse func(*Publisher) string) (Signed, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	sigs, err := ParseSignatures(sig)
	if err != nil {
		return Signed{}, err
	}
	var prehash []byte
	var out Signed
	var problems []string
	for _, s := range sigs {
		p, key, why := k.findKey(s.KeyID, refuse)
		if p == nil {
			problems = append(problems, why)
			continue
		}
		signed := msg
		if s.Algorithm == minisign.HashEdDSA {
			if prehash == nil {
				h := blake2b.Sum512(msg)
				prehash = h[:]
			}
			signed = prehash
		}
		if !verifySignature(key, signed, s) {
			problems = append(problems, fmt.Sprintf("the signature by key %s of publisher %s does not match these bytes (altered after signing, or signed for another file)", KeyID(s.KeyID), p.Name))
			continue
		}
		if out.Publisher != "" && out.Publisher != p.Name {
			continue // the first publisher that vouches is the one recorded
		}
		out.Publisher = p.Name
		out.KeyIDs = append(out.KeyIDs, KeyID(s.KeyID))
	}
	if out.Publisher == "" {
		return Signed{}, &VerifyError{Problems: problems}
	}
	return out, nil
}

// findKey finds the current key with id among the publishers refuse lets vouch, or
// says why there is none.
func (k *Keys) findKey(id uint64, refuse func(*Publisher) string) (*Publisher, minisign.PublicKey, string) {
	var why string
	for _, pn := range slicesSortedKeys(k.Publishers) {
		p := k.Publishers[pn]
		key, ok := p.key(id)
		if !ok {
			continue
		}
		if p.Revoked[id] {
			why = fmt.Sprintf("signed by key %s of publisher %s, which is revoked", KeyID(id), p.Name)
			continue
		}
		if r := refuse(p); r != "" {
			why = fmt.Sprintf("signed by key %s of publisher %s, %s", KeyID(id), p.Name, r)
			continue
		}
		return p, key, ""
	}
	if why == "" {
		why = fmt.Sprintf("signed by key %s, which no configured publisher has", KeyID(id))
	}
	return nil, minisign.PublicKey{}, why
}

// Revoked reports whether every key that signed an entry is revoked now, or the entry
// names a publisher that is no longer configured: then it is no longer trusted.
func (k *Keys) Revoked(e *Entry) string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if e.Publisher == "" {
		return ""
	}
	p, ok := k.Publishers[e.Publisher]
	if !ok {
		return "its publisher " + e.Publisher + " is no longer configured"
	}
	if !p.May(e.name) {
		return "its publisher " + e.Publisher + " may no longer sign plugin " + e.name
	}
	for _, id := range e.SignedBy {
		v, err := strconv.ParseUint(id, 16, 64)
		if err == nil && !p.Revoked[v] {
			return ""
		}
	}
	return "every key that signed it (" + strings.Join(e.SignedBy, ", ") + ") is revoked by publisher " + e.Publisher
}

// verifySignature checks a minisign signature: the message signature, then the
// global one over the signature and its trusted comment, as minisign does.
func verifySignature(key minisign.PublicKey, msg []byte, s minisign.Signature) bool {
	pub := keyBytes(key)
	if pub == nil || !ed25519.Verify(pub, msg, s.Signature[:]) {
		return false
	}
	global := append(slices.Clone(s.Signature[:]), s.TrustedComment...)
	return ed25519.Verify(pub, global, s.CommentSignature[:])
}

// ParseSignatures reads minisign signature text: one or more signatures, each the four
// lines minisign writes (untrusted comment, signature, trusted comment, global
// signature), blank lines between them allowed.
func ParseSignatures(text []byte) ([]minisign.Signature, error) {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, " \t"))
		}
	}
	if len(lines) == 0 || len(lines)%4 != 0 {
		return nil, errors.New("signature: want one or more minisign signatures of four lines each")
	}
	var out []minisign.Signature
	for i := 0; i < len(lines); i += 4 {
		var s minisign.Signature
		if err := s.UnmarshalText([]byte(strings.Join(lines[i:i+4], "\n"))); err != nil {
			return nil, fmt.Errorf("signature %d: %v", i/4+1, err)
		}
		out = append(out, s)
	}
	if len(out) > 16 {
		return nil, errors.New("signature: more than 16 signatures")
	}
	return out, nil
}

// A key-set update (Advance) is a short text document signed by a key of the
// publisher's current set:
//
//	yuzu-keyset 1
//	publisher acme
//	serial 2
//	key RWQ...
//	key RWT...
//	revoked 1A2B3C4D5E6F7A8B
//
// It replaces the current keys with its own. A rotation is two of them: serial N+1
// lists the old and the new key (signed with the old), serial N+2 the new key alone
// (signed with the new). A machine that was offline through both gets both later and
// applies them in order, so it is never left trusting only a key nothing is signed
// with any more.
const keysetMagic = "yuzu-keyset 1"

// KeySet is one parsed key-set update.
type KeySet struct {
	Publisher string
	Serial    uint64
	Keys      []minisign.PublicKey
	Revoked   []uint64
}

// ParseKeySet reads a key-set document.
func ParseKeySet(data []byte) (KeySet, error) {
	var ks KeySet
	if len(data) > maxKeyFileBytes {
		return ks, errors.New("key set: over 64 KiB")
	}
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(data), "\r\n", "\n")), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != keysetMagic {
		return ks, fmt.Errorf("key set: want first line %q", keysetMagic)
	}
	seenSerial := false
	for n, l := range lines[1:] {
		word, val, _ := strings.Cut(strings.TrimSpace(l), " ")
		val = strings.TrimSpace(val)
		switch word {
		case "":
		case "publisher":
			ks.Publisher = val
		case "serial":
			v, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return ks, fmt.Errorf("key set line %d: serial is not a whole number", n+2)
			}
			ks.Serial, seenSerial = v, true
		case "key":
			key, err := parseKey(val)
			if err != nil {
				return ks, fmt.Errorf("key set line %d: %w", n+2, err)
			}
			ks.Keys = append(ks.Keys, key)
		case "revoked":
			v, err := strconv.ParseUint(val, 16, 64)
			if err != nil {
				return ks, fmt.Errorf("key set line %d: revoked key id is not 16 hex digits", n+2)
			}
			ks.Revoked = append(ks.Revoked, v)
		default:
			return ks, fmt.Errorf("key set line %d: unknown word %q", n+2, word)
		}
	}
	switch {
	case !sdk.ValidName(ks.Publisher):
		return ks, errors.New("key set: no publisher line with a publisher's name")
	case !seenSerial:
		return ks, errors.New("key set: no serial line")
	case len(ks.Keys) == 0:
		return ks, errors.New("key set: no key")
	}
	return ks, nil
}

// AdvanceResult says what Advance did.
type AdvanceResult struct {
	Publisher string
	From, To  uint64
	// Applied is false when the update was already known (its serial is not newer).
	Applied bool
}

// Advance applies a key-set update: doc must be a key set of a configured publisher,
// newer than its current one, and sig a minisign signature of doc by a current,
// unrevoked key of that publisher. The update is kept in the state dir (so that it
// applies again after a restart) and becomes the publisher's key set at once.
func (k *Keys) Advance(doc, sig []byte) (AdvanceResult, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks, err := ParseKeySet(doc)
	if err != nil {
		return AdvanceResult{}, err
	}
	p, ok := k.Publishers[ks.Publisher]
	if !ok {
		return AdvanceResult{}, fmt.Errorf("key set for publisher %s, which is not configured", ks.Publisher)
	}
	res := AdvanceResult{Publisher: p.Name, From: p.Serial, To: ks.Serial}
	if ks.Serial <= p.Serial {
		return res, nil
	}
	if err := p.checkSigned(doc, sig); err != nil {
		return res, fmt.Errorf("key set %d of publisher %s: %w", ks.Serial, p.Name, err)
	}
	if k.stateDir != "" {
		base := filepath.Join(k.stateDir, p.Name, fmt.Sprintf("%020d", ks.Serial))
		if err := atomicfile.WriteMode(base+".keyset", doc, 0o644); err != nil {
			return res, err
		}
		if err := atomicfile.WriteMode(base+".keyset.minisig", sig, 0o644); err != nil {
			return res, err
		}
	}
	p.apply(ks)
	res.Applied = true
	return res, nil
}

// checkSigned verifies that a current, unrevoked key of p signed doc.
func (p *Publisher) checkSigned(doc, sig []byte) error {
	sigs, err := ParseSignatures(sig)
	if err != nil {
		return err
	}
	for _, s := range sigs {
		key, ok := p.key(s.KeyID)
		if !ok || p.Revoked[s.KeyID] {
			continue
		}
		msg := doc
		if s.Algorithm == minisign.HashEdDSA {
			h := blake2b.Sum512(doc)
			msg = h[:]
		}
		if verifySignature(key, msg, s) {
			return nil
		}
	}
	return errors.New("not signed by any current key of the publisher")
}

func (p *Publisher) apply(ks KeySet) {
	p.Keys, p.Serial = ks.Keys, ks.Serial
	for _, id := range ks.Revoked {
		p.Revoked[id] = true
	}
}

// replay applies the updates kept in the state dir, oldest first.
func (k *Keys) replay(p *Publisher) {
	if k.stateDir == "" {
		return
	}
	dir := filepath.Join(k.stateDir, p.Name)
	docs, _ := filepath.Glob(filepath.Join(dir, "*.keyset"))
	slices.Sort(docs) // zero-padded serials sort in order
	for _, d := range docs {
		doc, err := readTrusted(d, maxKeyFileBytes)
		if err == nil {
			var sig []byte
			if sig, err = readTrusted(d+".minisig", maxKeyFileBytes); err == nil {
				var ks KeySet
				if ks, err = ParseKeySet(doc); err == nil && ks.Publisher != p.Name {
					err = errors.New("names another publisher")
				}
				if err == nil && ks.Serial > p.Serial {
					if err = p.checkSigned(doc, sig); err == nil {
						p.apply(ks)
					}
				}
			}
		}
		if err != nil {
			k.Warnings = append(k.Warnings, fmt.Sprintf("key-set update %s ignored: %v", d, err))
		}
	}
}

func slicesSortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
