-- Conversations in account events carry what the API shows since the team inbox and the
-- 24-hour window landed: handoff_note, window_expires_at, unread_count, and the contact's
-- attributes, opt-out and timestamps (src/inbox/json.ts toConversationJson).
CREATE OR REPLACE FUNCTION api_conversation_json(c conversations) RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
  contact json;
  last json;
BEGIN
  SELECT json_build_object('id', k.id, 'wa_id', k.wa_id, 'name', k.name, 'phone', k.phone, 'tags', k.tags,
                           'attributes', k.attributes, 'opted_out', k.opted_out,
                           'created_at', api_timestamp(k.created_at), 'updated_at', api_timestamp(k.updated_at))
    INTO contact FROM contacts k WHERE k.id = c.contact_id;
  SELECT api_message_json(m) INTO last FROM messages m WHERE m.conversation_id = c.id
    ORDER BY m.created_at DESC, m.id DESC LIMIT 1;
  RETURN json_build_object(
    'id', c.id, 'status', c.status, 'assigned_to', c.assigned_to, 'handoff_note', c.handoff_note,
    'last_message_at', api_timestamp(c.last_message_at),
    'window_expires_at', api_timestamp(c.customer_message_at + interval '24 hours'),
    'unread_count', c.unread_count,
    'created_at', api_timestamp(c.created_at),
    'contact', contact, 'last_message', last);
END $$;
