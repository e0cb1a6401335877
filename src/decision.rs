//! message_decision: params evaluated in authored order, then the result, giving a [`Decision`].
