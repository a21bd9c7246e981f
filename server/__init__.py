"""The Gatehouse stdio server: pygls transport, the wire protocol, sessions and approvals."""
