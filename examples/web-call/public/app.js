// The browser side of a web call, following the browser client contract of docs/web-calls.md:
// 1. the session is minted by our server on the visitor's click (never on page load; the
//    API key stays on the server);
// 2. SIP over WebSocket to ws_url as sip:<sip_username>@<sip_domain>, authorization user
//    sip_username and password sip_password, no registration, no session timers;
// 3. dial target, audio only, forwarding every entry of headers as an extra SIP header;
// 4. every connection value is read from the response, never hard-coded here;
// 5. ICE servers configured on the peer connection;
// 6. served from localhost or HTTPS; the microphone is asked for on the click.
/* global JsSIP */
(function () {
  'use strict';

  var callButton = document.getElementById('call');
  var hangupButton = document.getElementById('hangup');
  var statusEl = document.getElementById('status');
  var remoteAudio = document.getElementById('remote');
  // Only the ICE configuration is fetched on load: no session, no credentials.
  var iceServers = fetch('/config.json').then(function (r) { return r.json(); }).then(function (c) { return c.iceServers; });
  var ua = null;
  var session = null;

  function setStatus(state, text) {
    statusEl.dataset.state = state;
    statusEl.textContent = text;
  }

  function reset() {
    session = null;
    if (ua) ua.stop();
    ua = null;
    callButton.disabled = false;
    hangupButton.hidden = true;
  }

  // After the last ICE candidate, wait this long for more before sending the INVITE: an
  // unreachable STUN/TURN server must not hold the call for the browser's full timeout.
  var ICE_SETTLE_MS = 1000;

  function dial(bootstrap, servers) {
    var extraHeaders = Object.keys(bootstrap.headers).map(function (name) {
      return name + ': ' + bootstrap.headers[name];
    });
    var iceTimer = null;
    session = ua.call(bootstrap.target, {
      mediaConstraints: { audio: true, video: false },
      rtcOfferConstraints: { offerToReceiveAudio: true, offerToReceiveVideo: false },
      pcConfig: { iceServers: servers },
      extraHeaders: extraHeaders,
      eventHandlers: {
        peerconnection: function (e) {
          e.peerconnection.addEventListener('track', function (event) {
            remoteAudio.srcObject = event.streams[0];
          });
        },
        icecandidate: function (e) {
          clearTimeout(iceTimer);
          iceTimer = setTimeout(e.ready, ICE_SETTLE_MS);
        },
        sending: function () { setStatus('calling', 'Calling…'); },
        progress: function () { setStatus('ringing', 'Connecting…'); },
        confirmed: function () { setStatus('connected', 'Connected: say hello.'); },
        ended: function (e) {
          setStatus('ended', 'Call ended (' + e.cause + ').');
          reset();
        },
        failed: function (e) {
          setStatus('failed', 'Call failed (' + e.cause + ').');
          reset();
        },
      },
    });
    hangupButton.hidden = false;
  }

  function start(bootstrap, servers) {
    var socket = new JsSIP.WebSocketInterface(bootstrap.ws_url);
    ua = new JsSIP.UA({
      sockets: [socket],
      uri: 'sip:' + bootstrap.sip_username + '@' + bootstrap.sip_domain,
      authorization_user: bootstrap.sip_username,
      password: bootstrap.sip_password,
      register: false,
      session_timers: false,
    });
    var dialled = false;
    ua.on('connected', function () {
      if (dialled) return;
      dialled = true;
      dial(bootstrap, servers);
    });
    ua.on('disconnected', function () {
      if (!dialled) {
        setStatus('failed', 'Could not reach the media edge.');
        reset();
      }
    });
    ua.start();
  }

  callButton.addEventListener('click', function () {
    callButton.disabled = true;
    setStatus('minting', 'Starting…');
    Promise.all([
      fetch('/session', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }).then(function (r) {
        return r.json().then(function (body) { return { ok: r.ok, body: body }; });
      }),
      iceServers,
    ])
      .then(function (results) {
        var minted = results[0];
        if (!minted.ok) throw new Error(minted.body.message || 'could not start the call');
        start(minted.body, results[1]);
      })
      .catch(function (err) {
        setStatus('failed', 'Could not start the call: ' + err.message);
        reset();
      });
  });

  hangupButton.addEventListener('click', function () {
    if (session) session.terminate();
  });
})();
