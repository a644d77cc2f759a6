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

    def test_a_root_for_both_ends(self):
        # What Go's crypto/x509 needs of a self-signed root used by a
        # server and a client: a CA that may sign, both key usages.
        from cryptography import x509
        from cryptography.x509.oid import ExtendedKeyUsageOID

        cert = x509.load_der_x509_certificate(Certificate().der)
        self.assertTrue(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
        self.assertTrue(cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign)
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        self.assertIn(ExtendedKeyUsageOID.SERVER_AUTH, eku)
        self.assertIn(ExtendedKeyUsageOID.CLIENT_AUTH, eku)

    def test_each_is_new(self):
        self.assertNotEqual(Certificate().der, Certificate().der)


if __name__ == "__main__":
    unittest.main()
