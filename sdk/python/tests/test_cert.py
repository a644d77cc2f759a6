"""The one-time certificate of AutoMTLS, read back by Python's own TLS."""

import base64
import os
import ssl
import tempfile
import unittest

from plugkit._cert import Certificate


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


class CertificateTest(unittest.TestCase):
    def test_certificate_reads_back(self):
        c = Certificate()
        with tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False) as f:
            f.write(c.cert_pem)
        try:
            info = ssl._ssl._test_decode_cert(f.name)
        finally:
            os.unlink(f.name)
        self.assertIn((("commonName", "localhost"),), info["subject"])
        self.assertEqual(info["subject"], info["issuer"])  # self-signed
        self.assertIn(("DNS", "localhost"), info["subjectAltName"])
        self.assertEqual(info["version"], 3)

    def test_key_matches_certificate(self):
        # OpenSSL refuses a key that does not belong to the certificate.
        c = Certificate()
        with tempfile.TemporaryDirectory() as d:
            cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
            write(cert, c.cert_pem)
            write(key, c.key_pem)
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
            write(key, Certificate().key_pem)
            with self.assertRaises(ssl.SSLError):
                ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)

    def test_handshake_field(self):
        c = Certificate()
        field = c.handshake_field()
        self.assertNotIn("=", field)
        self.assertEqual(base64.b64decode(field + "=" * (-len(field) % 4)), c.der)

    def test_each_is_new(self):
        self.assertNotEqual(Certificate().der, Certificate().der)


if __name__ == "__main__":
    unittest.main()
