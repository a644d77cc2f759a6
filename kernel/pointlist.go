package kernel

import "slices"

// item is a contribution as its point holds it.
type item struct {
	Contribution
	point string
	dead  bool
}

// pointList is one point's contributions: by Order, then age, with removed
// ones still in place (dead) until compact.
type pointList struct {
	list  []*item
	dead  int
	byKey map[string][]*item // live contributions with a key
}

func (l *pointList) live() int { return len(l.list) - l.dead }

func (l *pointList) insert(it *item) {
	n := len(l.list)
	if n == 0 || l.list[n-1].Order <= it.Order {
		// The common case: every contribution at one order, the newest last.
		l.list = append(l.list, it)
	} else {
		i, _ := slices.BinarySearchFunc(l.list, it.Order, func(c *item, order int) int {
			if c.Order <= order {
				return -1
			}
			return 1
		})
		l.list = slices.Insert(l.list, i, it)
	}
	if it.Key != "" {
		if l.byKey == nil {
			l.byKey = map[string][]*item{}
		}
		l.byKey[it.Key] = append(l.byKey[it.Key], it)
	}
}

func (l *pointList) drop(it *item) {
	it.dead = true
	l.dead++
	if it.Key != "" {
		same := slices.DeleteFunc(l.byKey[it.Key], func(x *item) bool { return x == it })
		if len(same) == 0 {
			delete(l.byKey, it.Key)
		} else {
			l.byKey[it.Key] = same
		}
	}
	// Compacting costs the point's size, so it waits until at least half
	// of the list is dead: removing n contributions costs O(n) in all.
	if l.dead > 16 && l.dead*2 > len(l.list) {
		l.list = slices.DeleteFunc(l.list, func(x *item) bool { return x.dead })
		l.dead = 0
	}
}

// each calls fn with the point's live contributions in order.
func (l *pointList) each(fn func(*item)) {
	for _, it := range l.list {
		if !it.dead {
			fn(it)
		}
	}
}

func (l *pointList) values() []Contribution {
	out := make([]Contribution, 0, l.live())
	l.each(func(it *item) { out = append(out, it.Contribution) })
	return out
}

// reservation keeps a unique point's key for its owner while the owner
// cannot hold it (its plugin is restarting, failed, or reloading).
type reservation struct {
	owner, why string
	holds      int
	// refused remembers who was refused, so that each is told (logged)
	// once per reservation.
	refused map[string]bool
}
