"""Group scenes: several character cards in one story (SillyTavern's group chats)."""
