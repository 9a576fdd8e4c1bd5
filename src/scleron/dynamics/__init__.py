"""The recursions (S&G passes 1-6, RNEA, CRBA), written once over an algebra."""
