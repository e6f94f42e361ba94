"""Personal-assistant domain pack (seed 002): email over IMAP/SMTP, the calendar over CalDAV, contacts
over CardDAV, on the user's own servers or on embedded local ones."""
