"""settee_admin_hash: a server admin's password as settee stores it
("-pbkdf2:sha256-<hex key>,<hex salt>,<iterations>", node/crypto.hpp), computed on the controller so
that no host's configuration ever holds the password in plain text.

The salt is derived from the cluster secret, the host and the admin's name (never from the
password: a salt that depended on it would let a reader test guesses without paying PBKDF2), so the
same inputs render the same line and a second run of a playbook changes nothing; two hosts, two
admins or two clusters never share a salt."""
import hashlib
import hmac

ITERATIONS = 50000  # node/crypto.hpp default_iterations


def settee_admin_hash(password, cluster_secret, host, name):
    salt = hmac.new(str(cluster_secret).encode(), f"settee admin salt\0{host}\0{name}".encode(),
                    hashlib.sha256).hexdigest()[:32]
    key = hashlib.pbkdf2_hmac("sha256", str(password).encode(), salt.encode(), ITERATIONS, 32).hex()
    return f"-pbkdf2:sha256-{key},{salt},{ITERATIONS}"


class FilterModule:
    def filters(self):
        return {"settee_admin_hash": settee_admin_hash}
