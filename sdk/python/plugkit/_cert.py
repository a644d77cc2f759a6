"""The plugin's one-time TLS certificate for go-plugin's AutoMTLS.

Under AutoMTLS the host puts its own certificate in PLUGIN_CLIENT_CERT and
expects the plugin to present a certificate of its own, which the plugin
sends in its handshake line: the host then trusts exactly that certificate
(as the root of its connection to the plugin and of the plugin's connection
back), and the plugin trusts exactly the host's. The host checks what Go's
crypto/x509 checks for a self-signed root: the name "localhost", the
server and client extended key usages, and a validity period around now.

Python's standard library cannot make a certificate, and this SDK depends
on nothing but grpcio and protobuf, so this module makes one itself: an
ECDSA P-256 key and a self-signed X.509 v3 certificate, DER-encoded by
hand. It is used once, at start, so plain integer arithmetic is fast
enough (a few milliseconds).
"""

import base64
import datetime
import hashlib
import secrets

# NIST P-256 (FIPS 186-4, D.1.2.3).
_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
_A = _P - 3
_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)


def _double(pt):
    # Jacobian coordinates: no inversion per step.
    x, y, z = pt
    if y == 0:
        return (0, 1, 0)
    s = 4 * x * y * y % _P
    m = (3 * x * x + _A * pow(z, 4, _P)) % _P
    x3 = (m * m - 2 * s) % _P
    return (x3, (m * (s - x3) - 8 * pow(y, 4, _P)) % _P, 2 * y * z % _P)


def _add(p1, p2):
    if p1[2] == 0:
        return p2
    if p2[2] == 0:
        return p1
    x1, y1, z1 = p1
    x2, y2, z2 = p2
    u1, u2 = x1 * z2 * z2 % _P, x2 * z1 * z1 % _P
    s1, s2 = y1 * pow(z2, 3, _P) % _P, y2 * pow(z1, 3, _P) % _P
    if u1 == u2:
        return _double(p1) if s1 == s2 else (0, 1, 0)
    h, r = (u2 - u1) % _P, (s2 - s1) % _P
    h2 = h * h % _P
    h3 = h * h2 % _P
    x3 = (r * r - h3 - 2 * u1 * h2) % _P
    return (x3, (r * (u1 * h2 - x3) - s1 * h3) % _P, h * z1 * z2 % _P)


def _mul(k):
    """k·G in affine coordinates."""
    acc, pt = (0, 1, 0), (_G[0], _G[1], 1)
    while k:
        if k & 1:
            acc = _add(acc, pt)
        pt = _double(pt)
        k >>= 1
    x, y, z = acc
    zi = pow(z, -1, _P)
    return (x * zi * zi % _P, y * pow(zi, 3, _P) % _P)


def _scalar():
    return secrets.randbelow(_N - 1) + 1


def _sign(d, msg):
    z = int.from_bytes(hashlib.sha256(msg).digest(), "big")
    while True:
        k = _scalar()
        r = _mul(k)[0] % _N
        s = pow(k, -1, _N) * (z + r * d) % _N
        if r and s:
            return _seq(_int(r), _int(s))


# DER, just what a certificate needs.


def _tlv(tag, body):
    n = len(body)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + body


def _seq(*parts):
    return _tlv(0x30, b"".join(parts))


def _int(v):
    return _tlv(0x02, v.to_bytes(v.bit_length() // 8 + 1, "big"))


def _oid(dotted):
    nums = [int(x) for x in dotted.split(".")]
    out = bytearray([40 * nums[0] + nums[1]])
    for v in nums[2:]:
        chunk = [v & 0x7F]
        v >>= 7
        while v:
            chunk.append(0x80 | (v & 0x7F))
            v >>= 7
        out += bytes(reversed(chunk))
    return _tlv(0x06, bytes(out))


def _bits(data, unused=0):
    return _tlv(0x03, bytes([unused]) + data)


def _utf8(s):
    return _tlv(0x0C, s.encode())


def _time(t):
    if t.year < 2050:
        return _tlv(0x17, t.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(0x18, t.strftime("%Y%m%d%H%M%SZ").encode())


def _ext(oid, value, critical=False):
    crit = _tlv(0x01, b"\xff") if critical else b""
    return _seq(_oid(oid), crit, _tlv(0x04, value))


_EC_PUBLIC_KEY = "1.2.840.10045.2.1"
_PRIME256V1 = "1.2.840.10045.3.1.7"
_ECDSA_SHA256 = "1.2.840.10045.4.3.2"


def _pem(kind, der):
    b64 = base64.encodebytes(der).decode().replace("\n", "")
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return ("-----BEGIN %s-----\n%s\n-----END %s-----\n" % (kind, "\n".join(lines), kind)).encode()


class Certificate:
    """A one-time key pair and its self-signed certificate."""

    def __init__(self, now=None):
        now = now or datetime.datetime.now(datetime.timezone.utc)
        d = _scalar()
        x, y = _mul(d)
        point = b"\x04" + x.to_bytes(32, "big") + y.to_bytes(32, "big")
        name = _seq(
            _tlv(0x31, _seq(_oid("2.5.4.10"), _utf8("plugkit"))),
            _tlv(0x31, _seq(_oid("2.5.4.3"), _utf8("localhost"))),
        )
        alg = _seq(_oid(_ECDSA_SHA256))
        extensions = _seq(
            _ext("2.5.29.15", _bits(b"\xac", 2), critical=True),  # digitalSignature, keyEncipherment, keyAgreement, keyCertSign
            _ext("2.5.29.37", _seq(_oid("1.3.6.1.5.5.7.3.2"), _oid("1.3.6.1.5.5.7.3.1"))),  # client and server auth
            _ext("2.5.29.19", _seq(_tlv(0x01, b"\xff")), critical=True),  # CA: its own root
            _ext("2.5.29.17", _seq(_tlv(0x82, b"localhost"))),
        )
        tbs = _seq(
            _tlv(0xA0, _int(2)),  # v3
            _int(secrets.randbits(127) | 1 << 126),
            alg,
            name,
            _seq(_time(now - datetime.timedelta(seconds=30)), _time(now + datetime.timedelta(days=3650))),
            name,
            _seq(_seq(_oid(_EC_PUBLIC_KEY), _oid(_PRIME256V1)), _bits(point)),
            _tlv(0xA3, extensions),
        )
        #: The certificate, DER.
        self.der = _seq(tbs, alg, _bits(_sign(d, tbs)))
        #: The certificate, PEM.
        self.cert_pem = _pem("CERTIFICATE", self.der)
        #: The private key, PEM (SEC 1).
        self.key_pem = _pem(
            "EC PRIVATE KEY",
            _seq(_int(1), _tlv(0x04, d.to_bytes(32, "big")), _tlv(0xA0, _oid(_PRIME256V1)), _tlv(0xA1, _bits(point))),
        )

    def handshake_field(self):
        """The certificate as the handshake line carries it: DER in base64, no padding."""
        return base64.b64encode(self.der).decode().rstrip("=")
