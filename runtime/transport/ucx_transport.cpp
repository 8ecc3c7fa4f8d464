// SPDX-License-Identifier: Apache-2.0
#include "runtime/transport/ucx_transport.h"

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <map>
#include <cstring>

#include <fmt/format.h>

#include "common/error.h"

namespace of::runtime::transport {
namespace {

constexpr unsigned kAmId = 17;  // the protocol's active messages

void check_ucs(ucs_status_t s, const char* what) {
  if (s != UCS_OK) fail({}, "UCX: {}: {}", what, ucs_status_string(s));
}

}  // namespace

struct UcxTransport::Impl {
  // A message in flight: its header bytes (and a stop's text) live here until UCX is done with
  // them. Entries are reused (free list) and never move (a deque): UCX holds their address.
  struct Send {
    Impl* owner = nullptr;
    uint8_t header[kWireHeaderBytes];
    std::string text;
    int32_t to_rank = -1;
    void* request = nullptr;  // UCX's, while in flight
    Send* next_free = nullptr;
  };
  // A large ready whose bytes UCX is still fetching into its landing slot.
  struct Receive {
    Impl* owner = nullptr;
    WireHeader header;
    void* request = nullptr;
    Receive* next_free = nullptr;
  };
  // Per edge into this rank: the next sequence number to deliver and those that came early
  // (held until their turn, and a ready until its slot's bytes landed).
  struct Inbound {
    uint64_t next = 0;
    std::vector<WireHeader> early;
    std::vector<uint8_t> held;
  };

  const RankRoutes& routes;
  const std::vector<std::vector<uint8_t*>>& landing;
  Receiver& receiver;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> eps;
  std::deque<Send> sends;
  Send* free_sends = nullptr;
  int64_t in_flight = 0;
  std::deque<Receive> receives;
  Receive* free_receives = nullptr;
  std::vector<uint64_t> out_seq;  // per edge out of this rank
  std::vector<Inbound> inbound;   // per edge into this rank
  // Per register landing here, per slot: the piece whose bytes are in place (-1: none).
  std::vector<std::vector<int64_t>> landed_piece;
  // Per (register, rank): the (slot, piece) last sent there with its bytes.
  std::map<std::pair<plan::RegstId, int32_t>, std::pair<int32_t, int64_t>> sent_bytes;
  bool failed = false;

  Impl(const RankRoutes& r, const std::vector<std::vector<uint8_t*>>& l, Receiver& rx) : routes(r), landing(l), receiver(rx) {}

  Send* take_send() {
    Send* s = free_sends;
    if (s) {
      free_sends = s->next_free;
    } else {  // more in flight than ever before: grows to the plan's bound, then stays
      s = &sends.emplace_back();
      s->owner = this;
    }
    ++in_flight;
    return s;
  }
  void give_send(Send* s) {
    s->request = nullptr;
    s->text.clear();
    s->next_free = free_sends;
    free_sends = s;
    --in_flight;
  }
  Receive* take_receive() {
    Receive* r = free_receives;
    if (r) {
      free_receives = r->next_free;
    } else {
      r = &receives.emplace_back();
      r->owner = this;
    }
    return r;
  }
  void give_receive(Receive* r) {
    r->request = nullptr;
    r->next_free = free_receives;
    free_receives = r;
  }

  // A failure this rank saw (`why` says what; "rank R: " is prefixed), or, relayed, another's.
  void fail_run(const std::string& why, bool relayed = false) {
    if (failed) return;
    failed = true;
    receiver.failed(relayed ? why : fmt::format("rank {}: {}", routes.rank(), why));
  }
  bool stop_sent = false;

  void send(int32_t to_rank, const WireHeader& h, const void* data, size_t bytes, std::string text = {});
  void landed(const WireHeader& h) {
    landed_piece[size_t(h.regst)][size_t(h.slot)] = h.piece;
    arrived(h);
    for (int32_t e : routes.local_edges(h.regst)) drain(e);  // readies held for these bytes
  }
  void arrived(const WireHeader& h);
  void drain(int32_t edge);

  static void on_sent(void* request, ucs_status_t status, void* user_data);
  static void on_received(void* request, ucs_status_t status, size_t length, void* user_data);
  static ucs_status_t on_message(void* arg, const void* header, size_t header_length, void* data, size_t length,
                                 const ucp_am_recv_param_t* param);
};

void UcxTransport::Impl::send(int32_t to_rank, const WireHeader& h, const void* data, size_t bytes, std::string text) {
  if (failed && h.kind != WireKind::stop) return;  // the run is stopping: nobody waits for it
  ucp_ep_h ep = eps[size_t(to_rank)];
  if (!ep) return;
  Send* s = take_send();
  s->to_rank = to_rank;
  encode(h, s->header);
  if (h.kind == WireKind::stop) {
    s->text = std::move(text);
    data = s->text.data();
    bytes = s->text.size();
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = on_sent;
  p.user_data = s;
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, kAmId, s->header, kWireHeaderBytes, data, bytes, &p);
  if (r == nullptr) {
    give_send(s);
  } else if (!UCS_PTR_IS_ERR(r)) {
    s->request = r;
  } else {
    give_send(s);
    if (h.kind != WireKind::stop)
      fail_run(fmt::format("sending to rank {} failed: {}", to_rank, ucs_status_string(UCS_PTR_STATUS(r))));
  }
}

void UcxTransport::Impl::on_sent(void* request, ucs_status_t status, void* user_data) {
  auto* s = static_cast<Send*>(user_data);
  Impl* self = s->owner;
  const int32_t to = s->to_rank;
  self->give_send(s);
  ucp_request_free(request);
  if (status != UCS_OK && status != UCS_ERR_CANCELED)
    self->fail_run(fmt::format("sending to rank {} failed: {}", to, ucs_status_string(status)));
}

void UcxTransport::Impl::on_received(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* r = static_cast<Receive*>(user_data);
  Impl* self = r->owner;
  const WireHeader h = r->header;
  self->give_receive(r);
  ucp_request_free(request);
  if (status != UCS_OK) {
    self->fail_run(fmt::format("receiving register {} from rank {} failed: {}", h.regst, h.from_rank, ucs_status_string(status)));
    return;
  }
  self->landed(h);
}

ucs_status_t UcxTransport::Impl::on_message(void* arg, const void* header, size_t header_length, void* data, size_t length,
                                            const ucp_am_recv_param_t* param) {
  auto* self = static_cast<Impl*>(arg);
  if (self->failed) return UCS_OK;  // the run is stopping: what still comes is dropped
  std::string why;
  const std::optional<WireHeader> h = decode(header, header_length, &why);
  if (h) why = self->routes.check(*h, length);
  if (!h || !why.empty()) {
    self->fail_run(fmt::format("refused a message{}: {}", h ? fmt::format(" from rank {}", h->from_rank) : "", why));
    return UCS_OK;
  }
  const bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  if (h->kind == WireKind::stop) {
    self->fail_run(rndv ? fmt::format("rank {} failed", h->from_rank) : std::string(static_cast<const char*>(data), length), true);
    return UCS_OK;
  }
  if (h->kind != WireKind::ready || !h->has_data) {
    self->arrived(*h);
    return UCS_OK;
  }
  const std::vector<uint8_t*>& slots = self->landing[size_t(h->regst)];
  if (slots.size() <= size_t(h->slot)) {  // check() passed it, so the plan lands it here: a broken invariant
    self->fail_run(fmt::format("register {} has no landing slot {}", h->regst, h->slot));
    return UCS_OK;
  }
  if (!rndv) {
    std::memcpy(slots[size_t(h->slot)], data, length);
    self->landed(*h);
    return UCS_OK;
  }
  Receive* r = self->take_receive();
  r->header = *h;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.recv_am = on_received;
  p.user_data = r;
  ucs_status_ptr_t s = ucp_am_recv_data_nbx(self->worker, data, slots[size_t(h->slot)], length, &p);
  if (s == nullptr) {
    self->give_receive(r);
    self->landed(*h);
  } else if (!UCS_PTR_IS_ERR(s)) {
    r->request = s;
  } else {
    self->give_receive(r);
    self->fail_run(fmt::format("receiving register {} from rank {}: {}", h->regst, h->from_rank, ucs_status_string(UCS_PTR_STATUS(s))));
  }
  return UCS_OK;
}

void UcxTransport::Impl::arrived(const WireHeader& h) {
  if (h.kind == WireKind::free) {  // frees only count down: their order does not matter
    receiver.deliver(h);
    return;
  }
  const int32_t edge = routes.edge(h.to_task, h.regst);
  Inbound& in = inbound[size_t(edge)];
  if (h.seq < in.next || h.seq - in.next >= in.early.size()) {
    fail_run(fmt::format("message {} on register {} to task {} is out of order (next is {})", h.seq, h.regst, h.to_task, in.next));
    return;
  }
  const size_t at = size_t(h.seq % in.early.size());
  in.early[at] = h;
  in.held[at] = 1;
  drain(edge);
}

void UcxTransport::Impl::drain(int32_t edge) {
  Inbound& in = inbound[size_t(edge)];
  for (;;) {
    const size_t at = size_t(in.next % in.early.size());
    if (!in.held[at]) return;
    const WireHeader& h = in.early[at];
    if (h.kind == WireKind::ready && routes.carries_bytes(edge) && landed_piece[size_t(h.regst)][size_t(h.slot)] != h.piece)
      return;  // bytes not here yet
    in.held[at] = 0;
    ++in.next;
    receiver.deliver(h);
    if (failed) return;
  }
}

UcxTransport::UcxTransport(const RankRoutes& routes, const std::vector<std::vector<uint8_t*>>& landing, Receiver& receiver)
    : impl_(std::make_unique<Impl>(routes, landing, receiver)) {
  Impl& m = *impl_;
  ucp_config_t* config = nullptr;
  check_ucs(ucp_config_read(nullptr, nullptr, &config), "reading the configuration");
  // Unless UCX_TLS says otherwise: every transport but CMA. Without peer error mode (see
  // connect()) a CMA read from a rank that died aborts this process inside UCX, where the run
  // controller would have named the rank; and shared memory without CMA is the faster of the
  // two here for large slots (../shared/DEPS.md).
  if (!std::getenv("UCX_TLS")) check_ucs(ucp_config_modify(config, "TLS", "^cma"), "leaving out CMA");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  const ucs_status_t s = ucp_init(&params, config, &m.context);
  ucp_config_release(config);
  check_ucs(s, "initializing");
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  check_ucs(ucp_worker_create(m.context, &wp, &m.worker), "creating a worker");
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = kAmId;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  hp.cb = Impl::on_message;
  hp.arg = &m;
  check_ucs(ucp_worker_set_am_recv_handler(m.worker, &hp), "setting the message handler");
  // Per-edge state, sized once: a consumer holds at most its register's slots, plus the end.
  m.out_seq.assign(routes.edges(), 0);
  m.inbound.resize(routes.edges());
  for (const plan::Regst& r : routes.plan().regsts)
    if (routes.local(r.producer))
      for (plan::TaskId c : r.consumers)
        if (!routes.local(c)) m.sent_bytes.emplace(std::make_pair(r.id, routes.rank_of(c)), std::make_pair(-1, int64_t(-1)));
  m.landed_piece.resize(landing.size());
  for (plan::RegstId r : routes.landed()) {
    m.landed_piece[size_t(r)].assign(size_t(routes.slots(r)), -1);
    for (int32_t e : routes.local_edges(r)) {
      m.inbound[size_t(e)].early.resize(size_t(routes.slots(r)) + 1);
      m.inbound[size_t(e)].held.assign(size_t(routes.slots(r)) + 1, 0);
    }
  }
}

UcxTransport::~UcxTransport() {
  Impl& m = *impl_;
  // A failed run leaves messages in flight: cancelled, their callbacks give their entries back.
  m.failed = true;
  for (Impl::Send& s : m.sends)
    if (s.request) ucp_request_cancel(m.worker, s.request);
  for (Impl::Receive& r : m.receives)
    if (r.request) ucp_request_cancel(m.worker, r.request);
  for (int i = 0; i < 1000 && ucp_worker_progress(m.worker) != 0; ++i) {
  }
  for (ucp_ep_h& ep : m.eps) {
    if (!ep) continue;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;  // after flush() nothing is pending; after a failure nothing matters
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(m.worker);
      ucp_request_free(r);
    }
    ep = nullptr;
  }
  if (m.worker) ucp_worker_destroy(m.worker);
  if (m.context) ucp_cleanup(m.context);
}

std::vector<uint8_t> UcxTransport::address() const {
  ucp_address_t* a = nullptr;
  size_t n = 0;
  check_ucs(ucp_worker_get_address(impl_->worker, &a, &n), "getting the worker address");
  std::vector<uint8_t> out(reinterpret_cast<uint8_t*>(a), reinterpret_cast<uint8_t*>(a) + n);
  ucp_worker_release_address(impl_->worker, a);
  return out;
}

void UcxTransport::connect(const std::vector<std::vector<uint8_t>>& addresses) {
  Impl& m = *impl_;
  m.eps.assign(addresses.size(), nullptr);
  for (size_t r = 0; r < addresses.size(); ++r) {
    if (int32_t(r) == m.routes.rank()) continue;
    ucp_ep_params_t ep{};
    // No peer error mode: UCX's shared-memory transports cannot give it, and would be left out.
    // A peer that dies is noticed by its bootstrap socket closing (the run controller); a send
    // that fails still fails the run here.
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses[r].data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    const ucs_status_t s = ucp_ep_create(m.worker, &ep, &m.eps[r]);
    if (s != UCS_OK) fail({}, "UCX: connecting to rank {}: {}", r, ucs_status_string(s));
  }
}

void UcxTransport::ready(plan::TaskId from, plan::TaskId to, plan::RegstId regst, int32_t slot, int64_t piece, const void* slot_data,
                         uint64_t bytes) {
  Impl& m = *impl_;
  const int32_t rank = m.routes.rank_of(to);
  const int32_t edge = m.routes.edge(to, regst);
  OF_ASSERT(edge >= 0, "a ready to a task of this rank, or one that does not read the register, went to the network");
  WireHeader h{.kind = WireKind::ready, .has_data = false, .from_rank = m.routes.rank(), .from_task = from, .to_task = to,
               .regst = regst, .slot = slot, .piece = piece, .seq = m.out_seq[size_t(edge)]++};
  // The slot's bytes go to a rank once per piece, with the first ready there.
  std::pair<int32_t, int64_t>& last = m.sent_bytes.at({regst, rank});
  h.has_data = m.routes.carries_bytes(edge) && last != std::pair<int32_t, int64_t>{slot, piece};
  if (h.has_data) last = {slot, piece};
  m.send(rank, h, h.has_data ? slot_data : nullptr, h.has_data ? bytes : 0);
}

void UcxTransport::free(plan::TaskId from, plan::TaskId to, plan::RegstId regst, int32_t slot) {
  Impl& m = *impl_;
  m.send(m.routes.rank_of(to), WireHeader{.kind = WireKind::free, .from_rank = m.routes.rank(), .from_task = from, .to_task = to,
                                          .regst = regst, .slot = slot},
         nullptr, 0);
}

void UcxTransport::eos(plan::TaskId from, plan::TaskId to, plan::RegstId regst) {
  Impl& m = *impl_;
  const int32_t edge = m.routes.edge(to, regst);
  OF_ASSERT(edge >= 0, "an end of stream to a task of this rank, or one that does not read the register, went to the network");
  m.send(m.routes.rank_of(to), WireHeader{.kind = WireKind::eos, .from_rank = m.routes.rank(), .from_task = from, .to_task = to,
                                          .regst = regst, .seq = m.out_seq[size_t(edge)]++},
         nullptr, 0);
}

void UcxTransport::stop_all(const std::string& why) {
  Impl& m = *impl_;
  if (m.stop_sent) return;
  m.stop_sent = true;
  const std::string text = why.substr(0, kMaxStopTextBytes);
  for (size_t r = 0; r < m.eps.size(); ++r)
    if (int32_t(r) != m.routes.rank()) m.send(int32_t(r), WireHeader{.kind = WireKind::stop, .from_rank = m.routes.rank()}, nullptr, 0, text);
}

void UcxTransport::progress() {
  while (ucp_worker_progress(impl_->worker) != 0) {
  }
}

bool UcxTransport::arm() {
  const ucs_status_t s = ucp_worker_arm(impl_->worker);
  if (s == UCS_ERR_BUSY) return false;
  check_ucs(s, "arming the worker");
  return true;
}

int UcxTransport::fd() const {
  int fd = -1;
  check_ucs(ucp_worker_get_efd(impl_->worker, &fd), "getting the worker's event fd");
  return fd;
}

bool UcxTransport::flush(double seconds) {
  Impl& m = *impl_;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (m.in_flight > 0) {
    ucp_worker_progress(m.worker);
    if (std::chrono::steady_clock::now() > until) return false;
  }
  return true;
}

}  // namespace of::runtime::transport
