"""The Gatehouse stdio server: pygls transport, protocol types, sessions and the approval broker."""
