package pipeline

// The numbers of stage 0's fast validator: JSON numbers compared by their
// decimal digits, so a bound is checked exactly, without float rounding.

// decimal is the exact value of a JSON number, read in place:
// ±0.d₁d₂d₃… × 10^point, where d₁d₂d₃… are the digits of whole and frac
// after the first skip, and d₁ is not 0 unless the number is 0.
type decimal struct {
	neg         bool
	whole, frac string
	skip        int
	point       int
}

// maxExponent bounds what parseDecimal reads: big.Rat, which jsonschema
// uses, refuses numbers whose decimal exponent, less the fraction's digits,
// goes beyond ±10⁶, so such numbers are left to jsonschema.
const maxExponent = 1_000_000

// parseDecimal reads a JSON number; ok is false for anything else, and for
// numbers too large or small for jsonschema to read.
func parseDecimal(s string) (d decimal, ok bool) {
	digits := func(i int) int {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	j := digits(i)
	if j == i || (s[i] == '0' && j > i+1) {
		return d, false
	}
	d.whole, i = s[i:j], j
	if i < len(s) && s[i] == '.' {
		if j = digits(i + 1); j == i+1 {
			return d, false
		}
		d.frac, i = s[i+1:j], j
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := i < len(s) && s[i] == '-'
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if i == len(s) {
			return d, false
		}
		for ; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return d, false
			}
			if exp = exp*10 + int(s[i]-'0'); exp > maxExponent {
				return d, false
			}
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) || len(d.frac)+max(exp, -exp) > maxExponent {
		return d, false
	}
	n := len(d.whole) + len(d.frac)
	for d.skip < n && d.at(d.skip) == '0' {
		d.skip++
	}
	d.point = len(d.whole) - d.skip + exp
	return d, true
}

// at is the i-th digit of whole and frac together.
func (d decimal) at(i int) byte {
	if i < len(d.whole) {
		return d.whole[i]
	}
	return d.frac[i-len(d.whole)]
}

// digits is how many digits follow the skipped zeros.
func (d decimal) digits() int { return len(d.whole) + len(d.frac) - d.skip }

// digit is d_(i+1), 0 past the last digit.
func (d decimal) digit(i int) byte {
	if i < d.digits() {
		return d.at(d.skip + i)
	}
	return '0'
}

func (d decimal) sign() int {
	switch {
	case d.digits() == 0:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmp compares d and e as numbers: -1, 0 or +1.
func (d decimal) cmp(e decimal) int {
	sd, se := d.sign(), e.sign()
	if sd != se || sd == 0 {
		return compare(sd, se)
	}
	c := compare(d.point, e.point)
	for i, n := 0, max(d.digits(), e.digits()); c == 0 && i < n; i++ {
		c = compare(d.digit(i), e.digit(i))
	}
	return c * sd
}

func compare[T int | byte](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isInteger reports whether d has no fractional part (1.0 and 1e2 do).
func (d decimal) isInteger() bool {
	n := d.digits()
	for n > 0 && d.digit(n-1) == '0' {
		n--
	}
	return n == 0 || n <= d.point
}
