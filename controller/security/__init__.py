"""Security: ZooKeeper authentication and ACLs (``acls``), TLS for gRPC (``tls``) and the
authorization of gRPC callers by certificate (``authz``).

Every part is off by default; with nothing configured the controller, the reference broker
and the admin tools behave exactly as without this package (plaintext gRPC, open ACLs).
"""
