package wire

// UpstreamRefused starts the error a tool returns when its upstream
// answered 401 to the upstream token the host sent with the call. For a
// user_consent upstream the host then drops that principal's token and
// asks them to consent again. A plugin that says it wrongly only loses the
// token of the principal whose call it serves.
const UpstreamRefused = "upstream refused the call's token (HTTP 401)"
