"""The plugin's one-time TLS certificate for go-plugin's AutoMTLS.

Under AutoMTLS the host puts its own certificate in PLUGIN_CLIENT_CERT and
expects the plugin to present a certificate of its own, which the plugin
sends in its handshake line: the host then trusts exactly that certificate
(as the root of its connection to the plugin and of the plugin's connection
back), and the plugin trusts exactly the host's. The host checks what Go's
crypto/x509 checks for a self-signed root: the name "localhost", the
server and client extended key usages, and a validity period around now.

Python's standard library cannot make a certificate; the ``cryptography``
package (Debian: python3-cryptography) makes the key and signs it, with
OpenSSL's constant-time ECDSA.
"""

import base64
import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class Certificate:
    """A one-time ECDSA P-256 key pair and its self-signed certificate."""

    def __init__(self, now=None):
        now = now or datetime.datetime.now(datetime.timezone.utc)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "plugkit"),
                x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
            ]
        )
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(seconds=30))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=True,
                    data_encipherment=False,
                    key_agreement=True,
                    key_cert_sign=True,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            # A CA: the host takes it as the only root it trusts for this plugin.
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256())
        )
        #: The certificate, DER.
        self.der = cert.public_bytes(serialization.Encoding.DER)
        #: The certificate, PEM.
        self.cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        #: The private key, PEM (SEC 1).
        self.key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )

    def handshake_field(self):
        """The certificate as the handshake line carries it: DER in base64, no padding."""
        return base64.b64encode(self.der).decode().rstrip("=")
