package auditlog

import (
	"crypto/ed25519"
	"fmt"
)

// Keyring follows which key signs a log's checkpoints, starting from one
// trusted public key:
//
//  1. A checkpoint by the current key must verify; when it is a rotation,
//     its next_key becomes the current key and the old one is retired.
//  2. A checkpoint by a retired key fails: rotating away from a key says it
//     must not sign anything after that point.
//  3. A checkpoint by any other key is not checked while no checkpoint by a
//     trusted key has been seen (a log verified with a newer key starts with
//     the older key's checkpoints; the newer key's first checkpoint signs the
//     whole chain before it anyway), and fails after one.
type Keyring struct {
	current   ed25519.PublicKey
	currentID string
	retired   map[string]bool
	seen      bool
}

// NewKeyring trusts pub.
func NewKeyring(pub ed25519.PublicKey) *Keyring {
	return &Keyring{current: pub, currentID: KeyID(pub), retired: map[string]bool{}}
}

// CurrentID is the id of the key that signs next.
func (k *Keyring) CurrentID() string { return k.currentID }

// Check applies c. signed says c was signed by a trusted key (then its seq
// and hash are signed); neither signed nor an error means c was not
// checked (rule 3).
func (k *Keyring) Check(c Checkpoint) (signed bool, err error) {
	switch {
	case c.KeyID == k.currentID:
		if !c.Verify(k.current) {
			return false, fmt.Errorf("checkpoint of seq %d: signature by key %s does not verify", c.Seq, c.KeyID)
		}
		k.seen = true
		next, err := c.Next()
		if err != nil {
			return false, err
		}
		if next != nil {
			k.retired[k.currentID] = true
			k.current, k.currentID = next, KeyID(next)
		}
		return true, nil
	case k.retired[c.KeyID]:
		return false, fmt.Errorf("checkpoint of seq %d: signed by key %s, which a rotation retired before it", c.Seq, c.KeyID)
	case k.seen:
		return false, fmt.Errorf("checkpoint of seq %d: signed by key %s, which is neither the trusted key (%s) nor one a rotation introduced", c.Seq, c.KeyID, k.currentID)
	}
	return false, nil
}
